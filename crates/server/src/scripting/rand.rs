//! `math.random` and `math.randomseed` as scripts see them in Redis 7.0: Redis replaces Lua's
//! (which calls the C library's `rand`) with its own `redisLrand48` (`rand.c`), so a script
//! draws the same numbers on every server with the same history.
//!
//! ```text
//!  state x: 48 bits        x ← (0x5DEECE66D · x + 0xB) mod 2^48      draw = x >> 17 (31 bits)
//!  start:  x = 0x1234_ABCD_330E          randomseed(s): x = hi16(s) · 2^32 + lo16(s) · 2^16 + 0x330E
//!  r = (draw mod INT32_MAX) / INT32_MAX ∈ [0, 1)
//!  random()     → r        random(u) → ⌊r·u⌋ + 1 (1 ≤ u)        random(l, u) → ⌊r·(u−l+1)⌋ + l
//! ```
//! One state serves the whole server, as Redis's one static state does: scripts run one at a
//! time (each holds every shard), so the sequence is the order the scripts ran in.

/// Redis's `redisLrand48` state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rand48 {
    x: u64,
}

const MASK_48: u64 = (1 << 48) - 1;
const MULTIPLIER: u64 = 0x5_DEEC_E66D;
const INCREMENT: u64 = 0xB;
/// `REDIS_LRAND48_MAX`.
const LRAND48_MAX: i64 = i32::MAX as i64;

impl Default for Rand48 {
    fn default() -> Self {
        Rand48 {
            x: 0x1234_ABCD_330E,
        }
    }
}

impl Rand48 {
    /// `redisSrand48(seed)`.
    pub fn seed(&mut self, seed: i32) {
        let seed = seed as u32;
        self.x = (u64::from(seed >> 16) << 32) | (u64::from(seed & 0xFFFF) << 16) | 0x330E;
    }

    /// `redisLrand48()`: the next 31-bit draw.
    pub fn draw(&mut self) -> i32 {
        // The product overflows 64 bits; only its low 48 matter, and 2^48 divides 2^64.
        self.x = MULTIPLIER.wrapping_mul(self.x).wrapping_add(INCREMENT) & MASK_48;
        (self.x >> 17) as i32
    }

    /// `math.random(...)` with `args` already converted as `luaL_checkint` converts (C's
    /// truncation to `int`): the number, or the message Lua raises (`luaL_argcheck`'s and
    /// `luaL_error`'s texts, which carry no script position when raised from C).
    pub fn random(&mut self, args: &[i32]) -> Result<f64, &'static str> {
        let draw = i64::from(self.draw());
        let r = (draw % LRAND48_MAX) as f64 / LRAND48_MAX as f64;
        match *args {
            [] => Ok(r),
            [u] if u < 1 => Err("bad argument #1 to 'random' (interval is empty)"),
            [u] => Ok((r * f64::from(u)).floor() + 1.0),
            [l, u] if l > u => Err("bad argument #2 to 'random' (interval is empty)"),
            [l, u] => Ok((r * (f64::from(u) - f64::from(l) + 1.0)).floor() + f64::from(l)),
            _ => Err("wrong number of arguments"),
        }
    }
}

/// `luaL_checkint` on a Lua number: C's `(int)` of the truncated value (`lua_Integer` is 64-bit
/// there, then cast to `int`, so large values wrap).
pub fn check_int(n: f64) -> i32 {
    if n.is_finite() {
        n as i64 as i32
    } else {
        i32::MIN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first draws from the start state and after `randomseed(0)`, and the values
    /// redis-server 7.0.15 returned for `math.random(1000000)` and `math.random()` from them.
    #[test]
    fn draws_match_redis() {
        let mut r = Rand48::default();
        assert_eq!(r.draw(), 851_401_618);
        assert_eq!(r.draw(), 1_804_928_587);
        let mut r = Rand48::default();
        assert_eq!(r.random(&[1_000_000]), Ok(396_465.0));
        assert_eq!(r.random(&[1_000_000]), Ok(840_486.0));
        r.seed(0);
        assert_eq!(r.random(&[1_000_000]), Ok(170_829.0));
        let x = r.random(&[]).expect("a draw");
        assert_eq!(format!("{x:.14}"), "0.74990198051087");
    }

    /// The argument checks and ranges of Lua's `math.random`.
    #[test]
    fn ranges_and_errors() {
        let mut r = Rand48::default();
        for _ in 0..1000 {
            let v = r.random(&[-3, 4]).expect("range");
            assert!((-3.0..=4.0).contains(&v) && v.fract() == 0.0);
            let v = r.random(&[]).expect("unit");
            assert!((0.0..1.0).contains(&v));
        }
        assert_eq!(
            r.random(&[0]),
            Err("bad argument #1 to 'random' (interval is empty)")
        );
        assert_eq!(
            r.random(&[5, 4]),
            Err("bad argument #2 to 'random' (interval is empty)")
        );
        assert_eq!(r.random(&[1, 2, 3]), Err("wrong number of arguments"));
        assert_eq!(check_int(7.9), 7);
        assert_eq!(check_int(-7.9), -7);
        assert_eq!(check_int(4_294_967_297.0), 1);
    }
}
