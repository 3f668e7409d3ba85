//! The two sorts a GEO search's results go through in redis-server 7.0.15, ported so that
//! results at equal distances come out in the same order as there.
//!
//! Redis sorts by distance only (`sort_gp_asc`: 1, 0 or -1), so points at the same distance —
//! duplicates, or members placed symmetrically — are ordered by the sort algorithm itself:
//!
//! * every result sorted (no COUNT, or COUNT ≥ the number found): glibc's `qsort`, which in
//!   glibc 2.36 (what redis-server runs on here) is the top-down merge sort of `msort.c` —
//!   stable, so equal distances keep the order the boxes were read in ([`merge_sort`]);
//! * COUNT below the number found: Redis's own `pqsort.c`, Bentley & McIlroy's quicksort that
//!   only recurses into the partitions overlapping the requested ranks ([`partial_sort`]). It
//!   is not stable; its swaps are reproduced one by one.
//!
//! Both take the comparator as Redis's C callbacks return it (`i32` sign), and both are total
//! functions of the comparator's answers, so a NaN distance (which compares neither greater nor
//! equal) reorders exactly as in C instead of upsetting a Rust sort's total-order contract.

/// glibc 2.36's `msort_with_tmp`: halves of `n / 2` and `n - n / 2`, merged taking the left
/// element while `cmp(left, right) <= 0`. `tmp` is scratch space.
pub fn merge_sort<T: Copy>(v: &mut [T], tmp: &mut Vec<T>, cmp: &impl Fn(&T, &T) -> i32) {
    let n = v.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    merge_sort(&mut v[..n1], tmp, cmp);
    merge_sort(&mut v[n1..], tmp, cmp);
    tmp.clear();
    let (mut i, mut j) = (0, n1);
    while i < n1 && j < n {
        if cmp(&v[i], &v[j]) <= 0 {
            tmp.push(v[i]);
            i += 1;
        } else {
            tmp.push(v[j]);
            j += 1;
        }
    }
    // What is left of the left half goes after; what is left of the right half is in place.
    tmp.extend_from_slice(&v[i..n1]);
    v[..tmp.len()].copy_from_slice(tmp);
}

/// Redis's `pqsort(a, n, es, cmp, lrange, rrange)`: sorts `v` enough that ranks
/// `lrange..=rrange` hold the elements a full sort would put there, in order.
pub fn partial_sort<T>(v: &mut [T], lrange: usize, rrange: usize, cmp: &impl Fn(&T, &T) -> i32) {
    let len = v.len();
    pqsort_part(v, 0, len, (lrange, rrange), cmp);
}

/// `med3`: the index of the median of three.
fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &impl Fn(&T, &T) -> i32) -> usize {
    if cmp(&v[a], &v[b]) < 0 {
        if cmp(&v[b], &v[c]) < 0 {
            b
        } else if cmp(&v[a], &v[c]) < 0 {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]) > 0 {
        b
    } else if cmp(&v[a], &v[c]) < 0 {
        a
    } else {
        c
    }
}

/// `vecswap`: swaps `n` elements from `a` with `n` from `b`, pairwise.
fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

/// Whether the part `start..start + n` lies wholly before or wholly after the requested ranks
/// (`_pqsort`'s test on byte addresses, in elements).
fn outside(start: usize, n: usize, (l, r): (usize, usize)) -> bool {
    (l < start && r < start) || (l >= start + n && r >= start + n)
}

/// `_pqsort` on `v[a..a + n]`: the tail recursion is the loop, as in C.
fn pqsort_part<T>(
    v: &mut [T],
    mut a: usize,
    mut n: usize,
    ranks: (usize, usize),
    cmp: &impl Fn(&T, &T) -> i32,
) {
    loop {
        if n < 7 {
            insertion_sort(v, a, n, cmp);
            return;
        }
        let pivot = pivot(v, a, n, cmp);
        v.swap(a, pivot);
        let (pa, pb, pc, pd) = partition(v, a, n, cmp);
        let pn = a + n;
        let r = (pa - a).min(pb - pa);
        vecswap(v, a, pb - r, r);
        let r = (pd - pc).min(pn - pd - 1);
        vecswap(v, pb, pn - r, r);
        let r = pb - pa;
        if r > 1 && !outside(a, r, ranks) {
            pqsort_part(v, a, r, ranks, cmp);
        }
        let r = pd - pc;
        if r <= 1 {
            return;
        }
        a = pn - r;
        n = r;
        if outside(a, n, ranks) {
            return;
        }
    }
}

/// The insertion sort `_pqsort` uses below 7 elements.
fn insertion_sort<T>(v: &mut [T], a: usize, n: usize, cmp: &impl Fn(&T, &T) -> i32) {
    for pm in a + 1..a + n {
        let mut pl = pm;
        while pl > a && cmp(&v[pl - 1], &v[pl]) > 0 {
            v.swap(pl, pl - 1);
            pl -= 1;
        }
    }
}

/// The pivot's index: the middle element, the median of three above 7 elements, the ninther
/// above 40.
fn pivot<T>(v: &[T], a: usize, n: usize, cmp: &impl Fn(&T, &T) -> i32) -> usize {
    let mut pm = a + n / 2;
    if n > 7 {
        let mut pl = a;
        let mut pn = a + n - 1;
        if n > 40 {
            let d = n / 8;
            pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
            pm = med3(v, pm - d, pm, pm + d, cmp);
            pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
        }
        pm = med3(v, pl, pm, pn, cmp);
    }
    pm
}

/// Bentley–McIlroy three-way partition around `v[a]`: returns (pa, pb, pc, pd) as `_pqsort`
/// leaves them (equal elements gathered at both ends).
fn partition<T>(
    v: &mut [T],
    a: usize,
    n: usize,
    cmp: &impl Fn(&T, &T) -> i32,
) -> (usize, usize, usize, usize) {
    let (mut pa, mut pb) = (a + 1, a + 1);
    let (mut pc, mut pd) = (a + n - 1, a + n - 1);
    // Each turn moves `pb` up or `pc` down, and they start n - 2 apart: at most n turns.
    loop {
        while pb <= pc {
            let c = cmp(&v[pb], &v[a]);
            if c > 0 {
                break;
            }
            if c == 0 {
                v.swap(pa, pb);
                pa += 1;
            }
            pb += 1;
        }
        while pb <= pc {
            let c = cmp(&v[pc], &v[a]);
            if c < 0 {
                break;
            }
            if c == 0 {
                v.swap(pc, pd);
                pd -= 1;
            }
            pc -= 1;
        }
        if pb > pc {
            return (pa, pb, pc, pd);
        }
        v.swap(pb, pc);
        pb += 1;
        pc -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    #[allow(
        clippy::trivially_copy_pass_by_ref,
        reason = "the comparator's signature"
    )]
    fn by_key(a: &(u32, u32), b: &(u32, u32)) -> i32 {
        match a.0.cmp(&b.0) {
            std::cmp::Ordering::Greater => 1,
            std::cmp::Ordering::Equal => 0,
            std::cmp::Ordering::Less => -1,
        }
    }

    #[test]
    fn merge_sort_is_a_stable_sort() {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut tmp = Vec::new();
        for n in 0..200 {
            let mut v: Vec<(u32, u32)> = (0..n).map(|i| (rng.gen_range(0..10), i)).collect();
            let mut want = v.clone();
            want.sort_by_key(|e| e.0);
            merge_sort(&mut v, &mut tmp, &by_key);
            assert_eq!(v, want);
        }
    }

    #[test]
    fn partial_sort_orders_the_requested_ranks() {
        let mut rng = SmallRng::seed_from_u64(8);
        for n in 1..300 {
            let v: Vec<(u32, u32)> = (0..n).map(|i| (rng.gen_range(0..50), i)).collect();
            let mut want: Vec<u32> = v.iter().map(|e| e.0).collect();
            want.sort_unstable();
            let count = rng.gen_range(1..=n as usize);
            let mut got = v.clone();
            partial_sort(&mut got, 0, count - 1, &by_key);
            let keys: Vec<u32> = got[..count].iter().map(|e| e.0).collect();
            assert_eq!(keys, want[..count], "n {n} count {count}");
            let mut ids: Vec<u32> = got.iter().map(|e| e.1).collect();
            ids.sort_unstable();
            assert_eq!(ids, (0..n).collect::<Vec<_>>());
        }
    }
}
