//! Security against servers that require it: an nkey user (the key pair
//! made by the test; a node with another seed is refused), TLS with a
//! certificate authority made by the test (a node that does not trust it
//! is refused), and mutual TLS (a node without a client certificate is
//! refused). Each server runs on a free loopback port.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use troupe::Props;
use troupe_remote::testing::echo::{Echo, EchoMsg};
use troupe_remote::testing::NatsServer;
use troupe_remote::{Auth, Node, RemoteConfig, RemoteError, Tls};

use support::{stop, system};

const ASK: Duration = Duration::from_secs(5);

/// Publishes an echo actor on `node` and asks it through NATS.
async fn round_trip(node: &Node, sys: &troupe::ActorSystem) {
    let echo = sys.spawn(Props::new(Echo::default)).unwrap();
    node.publish("echo", &echo).await.unwrap();
    let remote = node.lookup::<EchoMsg>("echo").await.unwrap();
    let answer = remote
        .ask(|r| EchoMsg::Echo("secure".into(), r), ASK)
        .await
        .unwrap();
    assert_eq!(answer, "secure");
}

fn refused(result: Result<Node, RemoteError>) {
    if let Err(e) = &result {
        println!("refused as expected: {e}");
    }
    assert!(
        matches!(result, Err(RemoteError::Connect(_))),
        "{:?}",
        result.err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_nkey_user_is_required_when_the_server_says_so() {
    let user = nkeys::KeyPair::new_user();
    let stranger = nkeys::KeyPair::new_user();
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("nkey.conf");
    std::fs::write(
        &conf,
        format!(
            "authorization {{ users = [ {{ nkey: \"{}\" }} ] }}\n",
            user.public_key()
        ),
    )
    .unwrap();
    let server =
        NatsServer::start_with(&["-c", conf.to_str().unwrap()]).unwrap_or_else(|e| panic!("{e}"));
    let sys = system();
    let mut config = RemoteConfig::new(server.url(), "nkey-holder");
    config.connect_timeout = Duration::from_secs(2);

    refused(Node::start(&sys, config.clone()).await);
    let wrong = config.clone().auth(Auth::NKey(stranger.seed().unwrap()));
    refused(Node::start(&sys, wrong).await);
    let node = Node::start(&sys, config.auth(Auth::NKey(user.seed().unwrap())))
        .await
        .unwrap();
    round_trip(&node, &sys).await;
    node.shutdown().await;
    stop(sys);
}

/// A certificate authority, a server certificate for 127.0.0.1 and a
/// client certificate, all signed by it, written as PEM files in `dir`.
struct Pki {
    ca: PathBuf,
    server: (PathBuf, PathBuf),
    client: (PathBuf, PathBuf),
}

fn make_pki(dir: &Path) -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let write = |name: &str, pem: String| {
        let path = dir.join(name);
        std::fs::write(&path, pem).unwrap();
        path
    };
    let leaf = |names: Vec<String>, stem: &str| {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &ca, &ca_key)
            .unwrap();
        (
            write(&format!("{stem}.pem"), cert.pem()),
            write(&format!("{stem}-key.pem"), key.serialize_pem()),
        )
    };
    Pki {
        ca: write("ca.pem", ca.pem()),
        server: leaf(vec!["127.0.0.1".into(), "localhost".into()], "server"),
        client: leaf(vec!["troupe-node".into()], "client"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_is_required_and_the_server_is_verified() {
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(dir.path());
    let server = NatsServer::start_with(&[
        "--tls",
        "--tlscert",
        pki.server.0.to_str().unwrap(),
        "--tlskey",
        pki.server.1.to_str().unwrap(),
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let sys = system();
    let mut config = RemoteConfig::new(server.url(), "tls-node");
    config.connect_timeout = Duration::from_secs(2);

    // Without our authority the server's certificate is not trusted.
    let mut untrusting = config.clone();
    untrusting.tls.required = true;
    refused(Node::start(&sys, untrusting).await);
    config.tls = Tls {
        required: true,
        root_certificates: Some(pki.ca.clone()),
        client_certificate: None,
    };
    let node = Node::start(&sys, config).await.unwrap();
    round_trip(&node, &sys).await;
    node.shutdown().await;
    stop(sys);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_requires_a_client_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(dir.path());
    let server = NatsServer::start_with(&[
        "--tlsverify",
        "--tlscert",
        pki.server.0.to_str().unwrap(),
        "--tlskey",
        pki.server.1.to_str().unwrap(),
        "--tlscacert",
        pki.ca.to_str().unwrap(),
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let sys = system();
    let mut config = RemoteConfig::new(server.url(), "mtls-node");
    config.connect_timeout = Duration::from_secs(2);
    config.tls = Tls {
        required: true,
        root_certificates: Some(pki.ca.clone()),
        client_certificate: None,
    };
    refused(Node::start(&sys, config.clone()).await);
    config.tls.client_certificate = Some(pki.client.clone());
    let node = Node::start(&sys, config).await.unwrap();
    round_trip(&node, &sys).await;
    node.shutdown().await;
    stop(sys);
}
