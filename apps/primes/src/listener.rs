//! Binding with a large accept backlog: a thousand clients connecting at
//! once must not overflow it (the OS default of 128 would).

use std::io;
use std::net::{SocketAddr, TcpListener};

use socket2::{Domain, Protocol, Socket, Type};

/// The accept backlog requested (the kernel caps it at `somaxconn`).
pub const BACKLOG: i32 = 4096;

/// A listening socket on `addr` with [`BACKLOG`] and address reuse.
pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(socket.into())
}
