//! What an engine gathers between two flushes (see `engine.rs`): answers
//! to clients, one message per client ([`Answers`]), and the orders it
//! forwards to its standby, one message for all of them ([`Forward`]).
//!
//! Gathering is what keeps the messages per order low: what the engine
//! produced from every message in its mailbox leaves as one message per
//! destination instead of one per order.

use troupe::ActorRef;

use super::wire::{client_of, ClientMsg, EngineCmd, Replica, StandbyAck, WireOrder};

/// What an engine tells a client about an order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// [`ClientMsg::Acks`].
    Ack,
    /// [`ClientMsg::PrimaryDone`] naming this standby revision.
    PrimaryDone(Option<u64>),
    /// [`ClientMsg::StandbyDone`] for this revision.
    StandbyDone(u64),
}

struct Batch {
    client: u32,
    answer: Answer,
    to: ActorRef<ClientMsg>,
    ids: Vec<u64>,
}

/// Answers gathered per client (the client id of the order ids) and kind,
/// each batch in the order its ids were added.
#[derive(Default)]
pub struct Answers {
    batches: Vec<Batch>,
}

impl Answers {
    /// Adds `answer` for order `id` of client `to`.
    pub fn add(&mut self, to: &ActorRef<ClientMsg>, id: u64, answer: Answer) {
        let client = client_of(id);
        // A handful of clients at a time: a scan beats hashing.
        match self
            .batches
            .iter_mut()
            .find(|b| b.client == client && b.answer == answer)
        {
            Some(batch) => batch.ids.push(id),
            None => self.batches.push(Batch {
                client,
                answer,
                to: to.clone(),
                ids: vec![id],
            }),
        }
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// Sends every batch, one message each; returns how many.
    pub fn send(self) -> u64 {
        let sent = self.batches.len() as u64;
        for Batch {
            answer, to, ids, ..
        } in self.batches
        {
            to.tell(match answer {
                Answer::Ack => ClientMsg::Acks { ids },
                Answer::PrimaryDone(standby) => ClientMsg::PrimaryDone { ids, standby },
                Answer::StandbyDone(epoch) => ClientMsg::StandbyDone { ids, epoch },
            });
        }
        sent
    }
}

/// Whom the standby answers for a forwarded order (see [`StandbyAck`]).
pub enum Forwarded<'a> {
    /// The primary.
    Primary,
    /// This client.
    Client(&'a ActorRef<ClientMsg>),
    /// This client, for an order applied before.
    Reconfirm(&'a ActorRef<ClientMsg>),
}

/// Orders a primary forwards to its standby, in its processing order,
/// with each client they name written once.
#[derive(Default)]
pub struct Forward {
    replicas: Vec<Replica>,
    /// The clients named so far, by client id, in the order first named.
    clients: Vec<(u32, ActorRef<ClientMsg>)>,
}

impl Forward {
    /// Adds order `order`.
    pub fn push(&mut self, order: WireOrder, to: Forwarded<'_>) {
        let ack = match to {
            Forwarded::Primary => StandbyAck::Primary,
            Forwarded::Client(client) => StandbyAck::Client(self.client_index(order.id, client)),
            Forwarded::Reconfirm(client) => {
                StandbyAck::Reconfirm(self.client_index(order.id, client))
            }
        };
        self.replicas.push(Replica { order, ack });
    }

    fn client_index(&mut self, id: u64, client: &ActorRef<ClientMsg>) -> u32 {
        let key = client_of(id);
        match self.clients.iter().position(|(c, _)| *c == key) {
            Some(i) => i as u32,
            None => {
                self.clients.push((key, client.clone()));
                (self.clients.len() - 1) as u32
            }
        }
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.replicas.is_empty()
    }

    /// Sends what was gathered to `standby` as one `Replicate` of
    /// revision `epoch` covering the primary's sequence numbers
    /// `from..to`, and starts over. With nothing gathered it is a probe
    /// (see [`EngineCmd::Replicate`]).
    pub fn send(&mut self, standby: &ActorRef<EngineCmd>, epoch: u64, from: u64, to: u64) {
        standby.tell(EngineCmd::Replicate {
            epoch,
            from,
            to,
            replicas: std::mem::take(&mut self.replicas),
            clients: self.clients.drain(..).map(|(_, client)| client).collect(),
        });
    }

    /// Drops what was gathered (its standby is gone).
    pub fn clear(&mut self) {
        self.replicas.clear();
        self.clients.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use troupe::{Actor, ActorSystem, Context, Props};

    struct Sink(mpsc::Sender<ClientMsg>);

    impl Actor for Sink {
        type Msg = ClientMsg;
        fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: ClientMsg) {
            let _ = self.0.send(msg);
        }
    }

    fn id(client: u32, seq: u32) -> u64 {
        (u64::from(client) << 32) | u64::from(seq)
    }

    #[test]
    fn answers_go_one_message_per_client_and_kind_in_order() {
        let system = ActorSystem::builder().threads(1).build().unwrap();
        let (tx, rx) = mpsc::channel();
        let sink = system.spawn(Props::new(move || Sink(tx.clone()))).unwrap();
        let mut answers = Answers::default();
        for (client, seq, answer) in [
            (1, 0, Answer::Ack),
            (2, 0, Answer::Ack),
            (1, 1, Answer::Ack),
            (1, 2, Answer::PrimaryDone(Some(3))),
            (2, 1, Answer::Ack),
        ] {
            answers.add(&sink, id(client, seq), answer);
        }
        assert_eq!(answers.send(), 3);
        let got: Vec<String> = (0..3)
            .map(|_| format!("{:?}", rx.recv().unwrap()))
            .collect();
        assert_eq!(
            got,
            vec![
                format!(
                    "{:?}",
                    ClientMsg::Acks {
                        ids: vec![id(1, 0), id(1, 1)]
                    }
                ),
                format!(
                    "{:?}",
                    ClientMsg::Acks {
                        ids: vec![id(2, 0), id(2, 1)]
                    }
                ),
                format!(
                    "{:?}",
                    ClientMsg::PrimaryDone {
                        ids: vec![id(1, 2)],
                        standby: Some(3)
                    }
                ),
            ]
        );
        system.shutdown();
    }
}
