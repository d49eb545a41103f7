//! Tests of [`options`](super).

use super::*;

fn setup() -> Setup {
    Setup::new(1, vec![1, 2, 3], vec![2, 3])
}

options! {
    /// A declaration of every shape, for the tests.
    struct Sample {
        laps: u64 = 100, Kind::Int { min: 1, max: u64::MAX }, "laps";
        rate: f64 = 8, Kind::Float { min: 0.5, max: 100.0 }, "rate";
        on: bool = false, Kind::Bool, "on";
        pick: &'static str = max, Kind::Choice(&["max", "min"]), "pick";
        server: Option<u64> = none shown "the smallest id", Kind::Int { min: 0, max: u64::MAX }, "server";
        weights: Vec<(NodeId, u64)> = none shown "1 each", Kind::IdWeights { max: 9 }, "weights", Launcher;
    }
}

#[test]
fn one_declaration_gives_the_default_the_keys_and_the_reading() {
    let d = Sample::default();
    assert_eq!(
        (d.laps, d.rate, d.on, d.pick, d.server, d.weights.len()),
        (100, 8.0, false, "max", None, 0)
    );
    let shown: Vec<&str> = Sample::KEYS.iter().map(|k| k.default).collect();
    assert_eq!(shown, ["100", "8", "false", "max", "the smallest id", "1 each"]);
    assert_eq!(Sample::KEYS[5].set_by, SetBy::Launcher);
    assert_eq!(Sample::KEYS[0].set_by, SetBy::User);
    let mut s = setup();
    for (k, v) in [
        ("laps", "3"),
        ("rate", "2.5"),
        ("on", "yes"),
        ("pick", "min"),
        ("server", "2"),
        ("weights", "1:4"),
    ] {
        s.opts.insert(k.into(), v.into());
    }
    let r = Sample::from_setup(&s).unwrap();
    assert_eq!(
        (r.laps, r.rate, r.on, r.pick, r.server, r.weights),
        (3, 2.5, true, "min", Some(2), vec![(1, 4)])
    );
    s.opts.insert("laps".into(), "0".into());
    assert_eq!(
        Sample::from_setup(&s),
        Err("--set laps=0: expected a whole number >= 1".into())
    );
    s.opts.insert("laps".into(), "x".into());
    assert_eq!(Sample::read(&s).laps, 100, "read: a bad value takes the default");
}

#[test]
fn keys_of_several_declarations_make_one_table() {
    const BOTH: [Key; 12] = concat_keys(&[Sample::KEYS, Sample::KEYS]);
    assert_eq!(BOTH[6].name, "laps");
    assert_eq!(BOTH[11].name, "weights");
}

#[test]
fn each_kind_accepts_its_values_and_names_what_it_expected() {
    let s = setup();
    let check = |k: Kind, v: &str| k.check("k", v, &s);
    for v in ["true", "false", "1", "0", "yes", "no"] {
        assert_eq!(check(Kind::Bool, v), Ok(()));
    }
    assert_eq!(
        check(Kind::Bool, "ture"),
        Err("--set k=ture: expected true or false".into())
    );
    let int = Kind::Int { min: 1, max: 10 };
    assert_eq!(check(int, "10"), Ok(()));
    assert_eq!(check(int, "0"), Err("--set k=0: expected a whole number 1..10".into()));
    assert_eq!(
        check(int, "-3"),
        Err("--set k=-3: expected a whole number 1..10".into())
    );
    let any = Kind::Int { min: 1, max: u64::MAX };
    assert_eq!(check(any, "x"), Err("--set k=x: expected a whole number >= 1".into()));
    let f = Kind::Float { min: 0.0, max: 1.0 };
    assert_eq!(check(f, "0.25"), Ok(()));
    assert_eq!(
        check(f, "NaN"),
        Err("--set k=NaN: expected a number from 0 to 1".into())
    );
    assert_eq!(
        check(f, "1.5"),
        Err("--set k=1.5: expected a number from 0 to 1".into())
    );
    let c = Kind::Choice(&["a", "b", "c"]);
    assert_eq!(check(c, "b"), Ok(()));
    assert_eq!(check(c, "d"), Err("--set k=d: expected a, b or c".into()));
    let w = Kind::IdWeights { max: 9 };
    assert_eq!(check(w, "1:5, 3:2"), Ok(()));
    assert_eq!(
        check(w, "1=5"),
        Err("--set k: '1=5' is not ID:N (e.g. k=1:5,2:3)".into())
    );
    assert_eq!(check(w, "7:1"), Err("--set k: node 7 is not a member".into()));
    assert_eq!(check(w, "1:10"), Err("--set k: node 1 has 10; at most 9".into()));
    assert_eq!(check(w, "1:1,1:2"), Err("--set k: node 1 appears twice".into()));
}

#[test]
fn one_parser_reads_every_id_list() {
    assert_eq!(id_list::<f64>(" 1:-2.5, ,3:4", &[1, 3]), Ok(vec![(1, -2.5), (3, 4.0)]));
    assert_eq!(id_list::<u64>("1=5", &[1]), Err(IdListError::NotPair("1=5".into())));
    assert_eq!(
        id_list::<u64>("x:5", &[1]),
        Err(IdListError::BadId {
            part: "x:5".into(),
            id: "x".into()
        })
    );
    assert_eq!(
        id_list::<u64>("1:y", &[1]),
        Err(IdListError::BadValue {
            part: "1:y".into(),
            value: "y".into()
        })
    );
    assert_eq!(id_list::<u64>("9:1", &[1]), Err(IdListError::NotMember(9)));
    assert_eq!(id_list::<u64>("1:1,1:2", &[1]), Err(IdListError::Twice(1)));
}
