//! Rounds: which cells run together. One-at-a-time patterns keep every host in at most one cell
//! of a round; a mesh follows the round-robin tournament (the circle method), A×B a Latin-square
//! rotation, anything else (named pairs, a filtered mesh's leftovers) a greedy first fit.

use crate::result::Pattern;
use std::collections::HashMap;

/// The rounds of `cells` ((from, to), indexes below `hosts`), as indexes into `cells`.
///
/// Incast and outcast: one round of every cell. Mesh: the circle method, both directions of
/// each pair, in 2(n − 1) rounds for an even n and 2n for an odd n when every ordered pair is
/// there. Disjoint A×B: max(|A|, |B|) rounds. Other lists (pairs, or cells left after
/// filtering): the full pattern's rounds with the missing cells left out, then a first fit of
/// whatever is left; a round never has a host twice, though it may be more rounds than the
/// fewest.
pub fn schedule(pattern: Pattern, hosts: usize, cells: &[(usize, usize)]) -> Vec<Vec<usize>> {
    if cells.is_empty() {
        return Vec::new();
    }
    let template = match pattern {
        Pattern::Incast | Pattern::Outcast => return vec![(0..cells.len()).collect()],
        Pattern::Mesh => circle(hosts),
        Pattern::Disjoint => latin(cells),
        Pattern::Pairs => Vec::new(),
    };
    fill(template, cells)
}

/// The double round-robin over `n` hosts: every unordered pair once in each direction, a
/// dummy host beside an odd count (its partner sits the round out).
fn circle(n: usize) -> Vec<Vec<(usize, usize)>> {
    if n < 2 {
        return Vec::new();
    }
    let m = n + n % 2;
    let spin = m - 1; // positions 0..spin turn; host m - 1 stays put
    let mut single: Vec<Vec<(usize, usize)>> = Vec::with_capacity(spin);
    for r in 0..spin {
        let mut round = vec![(r, m - 1)];
        for k in 1..m / 2 {
            round.push(((r + k) % spin, (r + spin - k) % spin));
        }
        // Alternate who sends to the fixed host, so each host's sends spread over the rounds.
        if r % 2 == 1 {
            round[0] = (m - 1, r);
        }
        round.retain(|&(a, b)| a < n && b < n);
        single.push(round);
    }
    let reversed: Vec<Vec<(usize, usize)>> = single
        .iter()
        .map(|round| round.iter().map(|&(a, b)| (b, a)).collect())
        .collect();
    single.into_iter().chain(reversed).collect()
}

/// A×B by rotation when the sides do not share a host: in round r the i-th of the smaller
/// side meets the (i + r)-th of the larger; max(|A|, |B|) rounds.
fn latin(cells: &[(usize, usize)]) -> Vec<Vec<(usize, usize)>> {
    let mut a: Vec<usize> = Vec::new();
    let mut b: Vec<usize> = Vec::new();
    for &(f, t) in cells {
        if !a.contains(&f) {
            a.push(f);
        }
        if !b.contains(&t) {
            b.push(t);
        }
    }
    if a.iter().any(|x| b.contains(x)) {
        return Vec::new();
    }
    let (small, large, flip) = if a.len() <= b.len() {
        (&a, &b, false)
    } else {
        (&b, &a, true)
    };
    (0..large.len())
        .map(|r| {
            small
                .iter()
                .enumerate()
                .map(|(i, &s)| {
                    let l = large[(i + r) % large.len()];
                    if flip { (l, s) } else { (s, l) }
                })
                .collect()
        })
        .collect()
}

/// Puts each cell in the first template round that has its pair, then every cell left in the
/// first round (existing or new) where neither of its hosts is busy; drops empty rounds.
fn fill(template: Vec<Vec<(usize, usize)>>, cells: &[(usize, usize)]) -> Vec<Vec<usize>> {
    let mut waiting: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
    for (i, &c) in cells.iter().enumerate().rev() {
        waiting.entry(c).or_default().push(i);
    }
    let mut rounds: Vec<Vec<usize>> = template
        .iter()
        .map(|round| {
            round
                .iter()
                .filter_map(|pair| waiting.get_mut(pair).and_then(Vec::pop))
                .collect::<Vec<usize>>()
        })
        .filter(|r| !r.is_empty())
        .collect();
    let mut left: Vec<usize> = waiting.into_values().flatten().collect();
    left.sort_unstable();
    let busy = |round: &[usize], h: usize| round.iter().any(|&c| cells[c].0 == h || cells[c].1 == h);
    for c in left {
        let (f, t) = cells[c];
        match rounds.iter_mut().find(|r| !busy(r, f) && !busy(r, t)) {
            Some(round) => round.push(c),
            None => rounds.push(vec![c]),
        }
    }
    for round in &mut rounds {
        round.sort_unstable();
    }
    rounds
}
