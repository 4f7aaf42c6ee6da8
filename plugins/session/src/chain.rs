//! `Chain`: an append-only sequence shared by many immutable views.
//!
//! A chain is a segment plus a length. A segment holds an optional base (a view of an older
//! chain) and its own append-only storage (`boxcar::Vec`, whose elements never move). Cloning
//! a view, taking a prefix of it or branching a new chain off it costs O(1) and copies no
//! element; a view never sees elements pushed beyond its length. The session log keeps its
//! events in one chain and its surface nodes in another, so a snapshot or a fork seed of a
//! live session shares both.

use std::sync::Arc;

/// Past this many nested segments, a splice copies its prefix into a fresh segment so that
/// lookups stay cheap on a surface with many replacements.
const MAX_SPLICE_DEPTH: usize = 16;

struct Segment<T> {
    /// The inherited prefix, if any.
    base: Option<Chain<T>>,
    /// Elements after `base`, in order. Only the view at the segment's tip pushes here.
    own: boxcar::Vec<T>,
    /// Number of segments below this one.
    depth: usize,
}

/// A view of the first `len` elements of a chain of segments.
pub(crate) struct Chain<T> {
    segment: Arc<Segment<T>>,
    len: usize,
}

impl<T> Clone for Chain<T> {
    fn clone(&self) -> Chain<T> {
        Chain {
            segment: self.segment.clone(),
            len: self.len,
        }
    }
}

impl<T> Default for Chain<T> {
    fn default() -> Chain<T> {
        Chain::from_iter(std::iter::empty())
    }
}

impl<T> FromIterator<T> for Chain<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Chain<T> {
        let own: boxcar::Vec<T> = items.into_iter().collect();
        let len = own.count();
        Chain {
            segment: Arc::new(Segment {
                base: None,
                own,
                depth: 0,
            }),
            len,
        }
    }
}

impl<T> Chain<T> {
    /// Number of elements in the view.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn base_len(&self) -> usize {
        self.segment.base.as_ref().map_or(0, Chain::len)
    }

    /// The element at `index`, if within the view. O(number of nested segments).
    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        if index >= self.len {
            return None;
        }
        let mut view = self;
        loop {
            match &view.segment.base {
                Some(base) if index < base.len => view = base,
                _ => return view.segment.own.get(index - view.base_len()),
            }
        }
    }

    /// The first `len` elements (the whole view when `len >= self.len()`), sharing storage.
    pub(crate) fn prefix(&self, len: usize) -> Chain<T> {
        Chain {
            segment: self.segment.clone(),
            len: len.min(self.len),
        }
    }

    /// A new, empty segment over this view: pushes to the result never touch the storage of
    /// `self`. O(1).
    pub(crate) fn branch(&self) -> Chain<T> {
        Chain {
            segment: Arc::new(Segment {
                base: Some(self.clone()),
                own: boxcar::Vec::new(),
                depth: self.segment.depth + 1,
            }),
            len: self.len,
        }
    }

    /// The elements in order, walking each segment once.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        let mut parts = Vec::new();
        let mut limit = self.len;
        let mut view = Some(self);
        while let Some(current) = view {
            let base_len = current.base_len().min(limit);
            parts.push((&current.segment.own, limit - base_len));
            limit = base_len;
            view = current.segment.base.as_ref();
        }
        parts
            .into_iter()
            .rev()
            .flat_map(|(own, count)| (0..count).filter_map(move |i| own.get(i)))
    }

    /// Whether both views share the same storage and length (no element was copied).
    pub(crate) fn same_storage(&self, other: &Chain<T>) -> bool {
        Arc::ptr_eq(&self.segment, &other.segment) && self.len == other.len
    }
}

impl<T: Clone> Chain<T> {
    /// Appends `value` to this view. When the view is at the tip of its segment the value goes
    /// there; otherwise (another view already pushed past it) the view first branches, so no
    /// other view ever sees the value.
    pub(crate) fn push(&mut self, value: T) {
        let expected = self.len - self.base_len().min(self.len);
        let tip = self.base_len() <= self.len && self.segment.own.count() == expected;
        if tip {
            let index = self.segment.own.push(value);
            if index == expected {
                self.len += 1;
                return;
            }
            // Another view pushed at the same tip concurrently: take our value back out.
            let Some(value) = self.segment.own.get(index).cloned() else {
                unreachable!("boxcar returned the index of a pushed element");
            };
            *self = self.branch();
            self.segment.own.push(value);
        } else {
            *self = self.branch();
            self.segment.own.push(value);
        }
        self.len += 1;
    }

    /// A view whose elements are `self[..start]`, then `value`, then `self[end + 1..]`: the
    /// prefix is shared, the tail after `end` is copied. `self` is unchanged.
    ///
    /// # Panics
    ///
    /// If `start > end` or `end >= self.len()`.
    pub(crate) fn splice(&self, start: usize, end: usize, value: T) -> Chain<T> {
        assert!(start <= end && end < self.len, "splice range out of bounds");
        let tail = std::iter::once(value).chain(self.iter().skip(end + 1).cloned());
        if self.segment.depth >= MAX_SPLICE_DEPTH {
            return self.iter().take(start).cloned().chain(tail).collect();
        }
        let mut spliced = self.prefix(start).branch();
        for item in tail {
            spliced.push(item);
        }
        spliced
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(chain: &Chain<u64>) -> Vec<u64> {
        chain.iter().copied().collect()
    }

    #[test]
    fn views_never_see_later_pushes_and_share_storage() {
        let mut chain: Chain<u64> = (0..3).collect();
        let view = chain.clone();
        chain.push(3);
        assert_eq!(items(&view), [0, 1, 2]);
        assert_eq!(items(&chain), [0, 1, 2, 3]);
        assert!(view.same_storage(&chain.prefix(3)));
    }

    #[test]
    fn a_view_behind_the_tip_branches_instead_of_overwriting() {
        let mut a: Chain<u64> = (0..3).collect();
        let mut b = a.clone();
        a.push(10);
        b.push(20);
        assert_eq!(items(&a), [0, 1, 2, 10]);
        assert_eq!(items(&b), [0, 1, 2, 20]);
        assert_eq!(b.get(3), Some(&20));
        let mut short = a.prefix(1);
        short.push(30);
        assert_eq!(items(&short), [0, 30]);
        assert_eq!(items(&a), [0, 1, 2, 10]);
    }

    #[test]
    fn splice_replaces_a_range_and_leaves_the_source_alone() {
        let chain: Chain<u64> = (0..6).collect();
        let spliced = chain.splice(1, 3, 9);
        assert_eq!(items(&spliced), [0, 9, 4, 5]);
        assert_eq!(items(&chain), [0, 1, 2, 3, 4, 5]);
        let mut deep = spliced;
        for round in 0..(MAX_SPLICE_DEPTH as u64 + 3) {
            deep = deep.splice(0, 0, 100 + round);
        }
        assert_eq!(deep.get(0), Some(&(100 + MAX_SPLICE_DEPTH as u64 + 2)));
        assert!(deep.segment.depth <= MAX_SPLICE_DEPTH);
        assert_eq!(items(&deep)[1..], [9, 4, 5]);
    }

    #[test]
    fn iterating_a_prefix_inside_the_base_stops_at_its_length() {
        let base: Chain<u64> = (0..4).collect();
        let mut child = base.branch();
        child.push(4);
        assert_eq!(items(&child.prefix(2)), [0, 1]);
        assert_eq!(items(&child), [0, 1, 2, 3, 4]);
    }
}
