//! The `trading` binary's replay: trades match the engine's own matching of
//! the same commands, and a malformed file is refused with its line numbers
//! and leaves no trade file.

use std::path::PathBuf;
use std::process::Command;

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_trading"))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("trading-replay-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn replay_writes_the_trades_of_a_generated_file() {
    let dir = temp_dir("ok");
    let orders = dir.join("orders.csv");
    let trades = dir.join("trades.csv");
    let gen = Command::new(bin())
        .args([
            "generate",
            "--commands",
            "20000",
            "--books",
            "3",
            "--seed",
            "7",
            "--out",
        ])
        .arg(&orders)
        .output()
        .unwrap();
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    let out = Command::new(bin())
        .args(["replay", "--orders"])
        .arg(&orders)
        .arg("--trades")
        .arg(&trades)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The same commands through the library, trade by trade.
    let text = std::fs::read_to_string(&orders).unwrap();
    let commands = trading_engine::text::parse_commands(&text, 1).unwrap();
    let mut market = trading_engine::Market::new();
    let mut expected = String::new();
    for c in &commands {
        let c = c.resolve(&mut market);
        let mut ts = Vec::new();
        market.execute(&c, |t| ts.push(t));
        for t in ts {
            trading_engine::text::write_trade(&t, &market, &mut expected);
        }
    }
    let written = std::fs::read_to_string(&trades).unwrap();
    assert!(!written.is_empty());
    assert_eq!(written, expected);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let count = written.lines().count();
    assert!(
        stdout.contains(&format!("trades:          {count} ")),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_malformed_line_is_reported_and_nothing_is_written() {
    let dir = temp_dir("bad");
    let orders = dir.join("orders.csv");
    let trades = dir.join("trades.csv");
    std::fs::write(
        &orders,
        "NEW,1,A1,SELL,100,5\nNEW,2,A1,BUY,100,5\nNEW,3,A1,BUY,abc,5\nCANCEL,1\n",
    )
    .unwrap();
    let out = Command::new(bin())
        .args(["replay", "--orders"])
        .arg(&orders)
        .arg("--trades")
        .arg(&trades)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 3: price"), "{stderr}");
    assert!(stderr.contains("line 4: CANCEL takes 2 fields"), "{stderr}");
    assert!(stderr.contains("nothing was applied"), "{stderr}");
    assert!(!trades.exists());
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        1,
        "no partial file left"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn replay_rebuilds_books_from_an_engine_log_and_refuses_a_damaged_one() {
    let root = temp_dir("journal");
    let config = trading::RunConfig {
        variant: trading::Variant::OneWay,
        scenario: trading::Scenario::new(2, 600).unwrap(),
        txlog: trading::TxLog::GroupCommit,
        log_root: Some(root.clone()),
        threads: 2,
        stealing: troupe::Stealing::default(),
        window: 1,
        timeout: std::time::Duration::from_secs(60),
    };
    let result = trading::run(&config).unwrap();
    assert!(result.verified(), "{:?}", result.problems);
    let log = root.join("engine-1-primary");
    let out = Command::new(bin())
        .args(["replay", "--journal"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (p, _) = result.engines[1];
    assert!(
        stdout.contains(&format!("commands:        {}", p.orders)),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("trades:          {} ", p.trades)),
        "{stdout}"
    );

    // Damage the first record (after the segment's 20-byte header): the
    // replay names the segment and offset.
    let segment = std::fs::read_dir(&log)
        .unwrap()
        .map(|e| e.unwrap())
        .find(|e| e.path().extension().is_some_and(|x| x == "log"))
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&segment).unwrap();
    bytes[20 + 10] ^= 0xff;
    std::fs::write(&segment, &bytes).unwrap();
    let out = Command::new(bin())
        .args(["replay", "--journal"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("damaged log") && stderr.contains("at byte 20"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&root).unwrap();
}
