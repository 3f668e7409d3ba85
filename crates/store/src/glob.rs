//! Glob matching with Redis 7.0's `stringmatchlen` semantics, in O(pattern × string) time.
//!
//! Redis matches recursively, one call per `*`, and bounds abusive patterns with its
//! `skipLongerMatches` early exit. Here the pattern is first cut into tokens that each match
//! exactly one byte (literal, `?`, class) or any run (`*`), then matched greedily with a single
//! backtrack point — the classic wildcard algorithm, which never revisits more than
//! `pattern × string` states, so `*a*a*a*…b` costs the same as any other pattern of its length.
//!
//! Quirks kept from Redis so KEYS and SCAN MATCH agree with it byte for byte:
//! * an empty string matches only the empty pattern (callers treat the pattern `*` as
//!   "everything" before matching, as Redis's KEYS and SCAN do);
//! * `\x` matches `x` literally, and a trailing `\` is a literal backslash;
//! * a class `[...]` with no closing `]` takes the rest of the pattern; `[^...]` negates;
//!   `a-z` is a range whose ends may come in either order, compared as signed chars as C does;
//!   `x-]` is a range to `]`, after which the class goes on.

/// One pattern token.
#[derive(Debug, Clone)]
enum Token {
    Star,
    Any,
    Byte(u8),
    Class {
        negated: bool,
        items: Vec<ClassItem>,
    },
}

#[derive(Debug, Clone, Copy)]
enum ClassItem {
    Byte(u8),
    Range(i8, i8),
}

fn tokenize(pattern: &[u8]) -> Vec<Token> {
    let mut tokens = Vec::with_capacity(pattern.len().min(1024));
    let mut i = 0;
    while i < pattern.len() {
        match pattern[i] {
            b'*' => {
                if !matches!(tokens.last(), Some(Token::Star)) {
                    tokens.push(Token::Star);
                }
                i += 1;
            }
            b'?' => {
                tokens.push(Token::Any);
                i += 1;
            }
            b'\\' if i + 1 < pattern.len() => {
                tokens.push(Token::Byte(pattern[i + 1]));
                i += 2;
            }
            b'[' => {
                i += 1;
                let negated = pattern.get(i) == Some(&b'^');
                if negated {
                    i += 1;
                }
                let mut items = Vec::new();
                loop {
                    let rest = pattern.len() - i;
                    if rest >= 2 && pattern[i] == b'\\' {
                        items.push(ClassItem::Byte(pattern[i + 1]));
                        i += 2;
                    } else if rest == 0 {
                        break;
                    } else if pattern[i] == b']' {
                        i += 1;
                        break;
                    } else if rest >= 3 && pattern[i + 1] == b'-' {
                        let (a, b) = (pattern[i] as i8, pattern[i + 2] as i8);
                        items.push(ClassItem::Range(a.min(b), a.max(b)));
                        i += 3;
                    } else {
                        items.push(ClassItem::Byte(pattern[i]));
                        i += 1;
                    }
                }
                tokens.push(Token::Class { negated, items });
            }
            byte => {
                tokens.push(Token::Byte(byte));
                i += 1;
            }
        }
    }
    tokens
}

fn token_matches(token: &Token, byte: u8) -> bool {
    match token {
        Token::Star | Token::Any => true,
        Token::Byte(b) => *b == byte,
        Token::Class { negated, items } => {
            let c = byte as i8;
            let hit = items.iter().any(|item| match *item {
                ClassItem::Byte(b) => b == byte,
                ClassItem::Range(lo, hi) => (lo..=hi).contains(&c),
            });
            hit != *negated
        }
    }
}

/// A compiled pattern, for matching many strings (KEYS, SCAN MATCH).
#[derive(Debug, Clone)]
pub struct Glob {
    tokens: Vec<Token>,
    everything: bool,
}

impl Glob {
    pub fn new(pattern: &[u8]) -> Glob {
        Glob {
            everything: pattern == b"*",
            tokens: tokenize(pattern),
        }
    }

    /// Whether the pattern is `*`, which callers treat as matching every key.
    pub fn is_everything(&self) -> bool {
        self.everything
    }

    pub fn matches(&self, string: &[u8]) -> bool {
        self.match_counting(string).0
    }

    /// The match result and the number of loop steps it took (≤ (tokens + 1) × (len + 1)).
    fn match_counting(&self, string: &[u8]) -> (bool, usize) {
        if self.everything {
            return (true, 0);
        }
        if string.is_empty() {
            // Redis's loop never runs on an empty string: only the empty pattern matches it.
            return (self.tokens.is_empty(), 0);
        }
        let tokens = &self.tokens;
        let (mut t, mut s) = (0, 0);
        let mut backtrack: Option<(usize, usize)> = None;
        let mut steps = 0;
        while s < string.len() {
            steps += 1;
            if t < tokens.len() {
                if let Token::Star = tokens[t] {
                    backtrack = Some((t, s));
                    t += 1;
                    continue;
                }
                if token_matches(&tokens[t], string[s]) {
                    t += 1;
                    s += 1;
                    continue;
                }
            }
            match backtrack {
                Some((star, at)) => {
                    // Let the last star swallow one more byte and retry after it.
                    t = star + 1;
                    s = at + 1;
                    backtrack = Some((star, at + 1));
                }
                None => return (false, steps),
            }
        }
        (
            tokens[t..].iter().all(|token| matches!(token, Token::Star)),
            steps,
        )
    }
}

/// One-shot match (CONFIG GET patterns and the like).
pub fn matches(pattern: &[u8], string: &[u8]) -> bool {
    Glob::new(pattern).matches(string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_cases() {
        let yes: [(&[u8], &[u8]); 15] = [
            (b"*", b""),
            (b"*", b"anything"),
            (b"h?llo", b"hello"),
            (b"h*llo", b"heeeello"),
            (b"h[ae]llo", b"hallo"),
            (b"h[^e]llo", b"hallo"),
            (b"h[a-b]llo", b"hbllo"),
            (b"h[b-a]llo", b"hbllo"),
            (b"a\\*b", b"a*b"),
            (b"key:*", b"key:1"),
            (b"a**", b"a"),
            (b"[abc", b"c"),
            (b"[a-]x", b"]"),
            (b"x\\", b"x\\"),
            (b"", b""),
        ];
        for (p, s) in yes {
            assert!(
                matches(p, s),
                "{:?} !~ {:?}",
                String::from_utf8_lossy(p),
                String::from_utf8_lossy(s)
            );
        }
        let no: [(&[u8], &[u8]); 10] = [
            (b"**", b""),
            (b"a", b""),
            (b"a*", b""),
            (b"h[^e]llo", b"hello"),
            (b"h[a-b]llo", b"hcllo"),
            (b"a\\*b", b"axb"),
            (b"[", b"a"),
            (b"h?llo", b"hllo"),
            (b"abc", b"abcd"),
            (b"*?", b""),
        ];
        for (p, s) in no {
            assert!(
                !matches(p, s),
                "{:?} =~ {:?}",
                String::from_utf8_lossy(p),
                String::from_utf8_lossy(s)
            );
        }
        assert!(
            matches(b"[^", b"q"),
            "an empty negated class matches any byte"
        );
    }

    #[test]
    fn abusive_pattern_stays_within_pattern_times_string_steps() {
        let pattern = b"*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b".repeat(4);
        let string = vec![b'a'; 5_000];
        let glob = Glob::new(&pattern);
        let (matched, steps) = glob.match_counting(&string);
        assert!(!matched);
        assert!(
            steps <= (glob.tokens.len() + 1) * (string.len() + 1),
            "{steps} steps"
        );
    }
}
