//! The `user` directive, for the one user densekv has: `default`, with every key, channel and
//! command. A line that describes that user (`user default on nopass ~* &* +@all`, or with
//! `>password`) sets its password as `requirepass` does; a line about another user, or one that
//! takes something away from the default user, is a startup error that says so, because
//! densekv cannot enforce it.
//!
//! CONFIG REWRITE writes the default user back as Redis's `ACLDescribeUser` does:
//! `user default on nopass ~* &* +@all`, or `on #<sha256 of the password> ~* &* +@all`, so the
//! file reads the same to redis-server. SHA-256 is FIPS 180-4, written out below (64 rounds over
//! 64-byte blocks) rather than pulled in as a dependency for one hash per rewrite.

use crate::config::Config;

/// Applies `user <name> <rule>…` (`args` without the directive) to `config`.
pub fn apply(config: &mut Config, args: &[Vec<u8>]) -> Result<(), String> {
    let declaration = |arg: &[u8], why: &str| {
        format!(
            "Error in user declaration '{}': {why}",
            String::from_utf8_lossy(arg)
        )
    };
    let (name, rules) = args
        .split_first()
        .expect("the loader passes at least the name");
    if name.as_slice() != b"default" {
        return Err(declaration(
            name,
            "densekv supports only the default user (user default on nopass|>password ~* &* +@all)",
        ));
    }
    let mut password: Option<Option<Vec<u8>>> = None;
    for rule in rules {
        let lower = rule.to_ascii_lowercase();
        match lower.as_slice() {
            b"on"
            | b"~*"
            | b"allkeys"
            | b"%rw~*"
            | b"&*"
            | b"allchannels"
            | b"+@all"
            | b"allcommands"
            | b"resetchannels"
            | b"resetkeys"
            | b"reset"
            | b"resetpass"
            | b"sanitize-payload"
            | b"skip-sanitize-payload" => {}
            b"nopass" => password = Some(None),
            _ if rule.first() == Some(&b'>') => password = Some(Some(rule[1..].to_vec())),
            b"off" | b"-@all" | b"nocommands" => {
                return Err(declaration(
                    rule,
                    "densekv cannot restrict the default user: it always has every key, channel and command",
                ));
            }
            _ if matches!(
                rule.first(),
                Some(b'~' | b'%' | b'&' | b'+' | b'-' | b'#' | b'<' | b'!' | b'(')
            ) =>
            {
                return Err(declaration(
                    rule,
                    "densekv supports only the default user with every key, channel and command (~* &* +@all), and passwords given as >password",
                ));
            }
            // Redis names the word at the rule's index in the whole line ("user" for the first
            // rule, the user's name for the second): its error index counts rules, its message
            // indexes the line.
            _ => {
                let at = rules
                    .iter()
                    .position(|r| std::ptr::eq(r, rule))
                    .unwrap_or(0);
                let word = match at {
                    0 => &b"user"[..],
                    1 => name.as_slice(),
                    n => rules[n - 2].as_slice(),
                };
                return Err(declaration(word, "Syntax error"));
            }
        }
    }
    if let Some(password) = password {
        config.requirepass = password;
    }
    Ok(())
}

/// The default user's line as CONFIG REWRITE writes it.
pub fn describe_default(config: &Config) -> String {
    match &config.requirepass {
        None => "user default on nopass ~* &* +@all".to_string(),
        Some(pass) => format!("user default on #{} ~* &* +@all", hex(&sha256(pass))),
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

// The round constants and initial hash of FIPS 180-4, written as the standard prints them.
#[allow(clippy::unreadable_literal)]
const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// SHA-256 of `data` (FIPS 180-4).
#[allow(clippy::unreadable_literal)]
pub fn sha256(data: &[u8]) -> [u8; 32] {
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    // The message, a 1 bit, zeros to 56 mod 64, and the bit length big-endian.
    let mut message = data.to_vec();
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    message.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in message.chunks_exact(64) {
        compress(&mut h, block);
    }
    let mut out = [0u8; 32];
    for (chunk, word) in out.chunks_exact_mut(4).zip(h) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}

fn compress(h: &mut [u32; 8], block: &[u8]) {
    let mut w = [0u32; 64];
    for (i, word) in block.chunks_exact(4).enumerate() {
        w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
    }
    for i in 16..64 {
        let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
        let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16]
            .wrapping_add(s0)
            .wrapping_add(w[i - 7])
            .wrapping_add(s1);
    }
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = *h;
    for i in 0..64 {
        let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
        let ch = (e & f) ^ (!e & g);
        let t1 = hh
            .wrapping_add(s1)
            .wrapping_add(ch)
            .wrapping_add(K[i])
            .wrapping_add(w[i]);
        let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
        let maj = (a & b) ^ (a & c) ^ (b & c);
        let t2 = s0.wrapping_add(maj);
        hh = g;
        g = f;
        f = e;
        e = d.wrapping_add(t1);
        d = c;
        c = b;
        b = a;
        a = t1.wrapping_add(t2);
    }
    for (x, v) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
        *x = x.wrapping_add(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_known_answers() {
        assert_eq!(
            hex(&sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // The hash redis-server wrote for `requirepass "foo bar"`.
        assert_eq!(
            hex(&sha256(b"foo bar")),
            "fbc1a9f858ea9e177916964bd88c3d37b91a1e84412765e29950777f265c4b75"
        );
        let long = vec![b'a'; 1000];
        assert_eq!(
            hex(&sha256(&long)),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"
        );
    }

    fn words(line: &str) -> Vec<Vec<u8>> {
        line.split(' ').map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn the_default_user_maps_onto_requirepass() {
        let mut c = Config::default();
        apply(&mut c, &words("default on >s3cret ~* &* +@all")).unwrap();
        assert_eq!(c.requirepass.as_deref(), Some(&b"s3cret"[..]));
        apply(&mut c, &words("default on nopass ~* &* +@all")).unwrap();
        assert_eq!(c.requirepass, None);
        let e = apply(&mut c, &words("alice on >x ~* +@all")).unwrap_err();
        assert!(
            e.starts_with("Error in user declaration 'alice': densekv supports only"),
            "{e}"
        );
        let e = apply(&mut c, &words("default on ~cache:* +@all")).unwrap_err();
        assert!(e.contains("'~cache:*'"), "{e}");
        let e = apply(&mut c, &words("default bogus")).unwrap_err();
        assert_eq!(e, "Error in user declaration 'user': Syntax error");
        let e = apply(&mut c, &words("default on ~* bogus")).unwrap_err();
        assert_eq!(e, "Error in user declaration 'on': Syntax error");
    }
}
