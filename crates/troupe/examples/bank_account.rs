//! A bank account as an actor: deposits and withdrawals are told, the
//! balance is asked, and a supervisor strategy decides what a crash costs.
//! A bug in the audit code panics; the strategy resumes the account with
//! its balance intact, while any other failure would restart it.
//!
//! `cargo run -p troupe --example bank_account`

use std::time::Duration;

use troupe::prelude::*;
use troupe::Directive;

enum Account {
    Deposit(u64),
    Withdraw(u64, ReplyTo<Result<u64, String>>),
    Balance(ReplyTo<u64>),
    Audit,
}

struct Holder {
    balance: u64,
}

impl Actor for Holder {
    type Msg = Account;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: Account) {
        match msg {
            Account::Deposit(amount) => self.balance += amount,
            Account::Withdraw(amount, reply) => {
                let answer = match self.balance.checked_sub(amount) {
                    Some(left) => {
                        self.balance = left;
                        Ok(left)
                    }
                    None => Err(format!("insufficient funds: {} < {amount}", self.balance)),
                };
                reply.reply(answer);
            }
            Account::Balance(reply) => {
                reply.reply(self.balance);
            }
            Account::Audit => panic!("audit: the report generator is broken"),
        }
    }
}

fn main() {
    // The example's expected panic is not a crash of the program.
    std::panic::set_hook(Box::new(|info| eprintln!("(caught) {info}")));
    let system = ActorSystem::builder()
        .name("bank")
        .threads(2)
        .build()
        .unwrap();
    let strategy = SupervisorStrategy::deciding(|failure| {
        if failure.message.starts_with("audit") {
            Directive::Resume // a reporting bug must not lose the balance
        } else {
            Directive::Restart
        }
    })
    .with_limit(3, Duration::from_secs(60));
    let account = system
        .spawn(
            Props::new(|| Holder { balance: 0 })
                .name("alice")
                .supervisor(strategy),
        )
        .unwrap();
    let timeout = Duration::from_secs(5);

    account.tell(Account::Deposit(100));
    let spent = account
        .ask(|r| Account::Withdraw(30, r), timeout)
        .wait()
        .unwrap();
    println!("withdrew 30, left: {spent:?}");
    let refused = account
        .ask(|r| Account::Withdraw(500, r), timeout)
        .wait()
        .unwrap();
    println!("withdraw 500: {refused:?}");

    account.tell(Account::Audit); // panics inside the actor; resumed
    let balance = account.ask(Account::Balance, timeout).wait().unwrap();
    println!("balance after the failed audit: {balance}");
    assert_eq!(balance, 70, "resume kept the state");

    system.shutdown();
    system.await_termination().unwrap();
}
