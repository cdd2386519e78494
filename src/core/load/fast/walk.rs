//! The walk of one line: where the members the slow path reads lie (the
//! top level, `policy`, `expectation`, both sides and their `response`),
//! and the members of each side's `state`, taken from the other side's
//! state or from an earlier line's where their text repeats it.

use super::memo::{
    Reading, SH_EXPECTATION, SH_POLICY, SH_RESPONSE, SH_SIDE, SH_TOP, SMALL_ENTRIES, SMALL_MAX,
    SeenKey, SmallEntry, Target, small_entry,
};
use super::scan::{Keyed, MAX_DEPTH, Scan, common_prefix, key_bit};
use super::span::{Kind, Member, NONE, Span, Val};
use crate::core::schema::{
    CONVERTED_FROM, N_EXP, S_RESPONSE, S_STATE, T_EXPECTATION, T_POLICY, T_SOURCE, T_VARIANT,
    expectation_slot, policy_slot, response_slot, side_slot, top_slot,
};

impl Scan<'_, '_> {
    /// The whole line: one object and nothing after it.
    pub(super) fn line(&mut self) -> Option<()> {
        self.ws();
        if self.peek()? != b'{' {
            return None;
        }
        self.object(1, Some((SH_TOP, top_slot)), |s, slot, (ks, ke), d| {
            let Some(slot) = slot else {
                let kind = s.value(d)?;
                if kind != Kind::Null && &s.b[ks..ke] == CONVERTED_FROM.as_bytes() {
                    s.s.converted = true;
                }
                return Some(false);
            };
            let start = s.i;
            let kind = match (slot, s.peek()?) {
                (T_SOURCE, b'{') => s.side(d + 1, 0)?,
                (T_VARIANT, b'{') => s.side(d + 1, 1)?,
                (T_POLICY, b'{') => s.fields(d + 1, Target::Policy)?,
                (T_EXPECTATION, b'{') => s.fields(d + 1, Target::Expectation)?,
                _ => s.value(d)?,
            };
            Self::put(&mut s.s.top[slot], kind, start, s.i).map(|()| true)
        })?;
        self.ws();
        (self.i == self.b.len()).then_some(())
    }

    /// A small object whose known members go to `t`'s slots.
    fn fields(&mut self, depth: usize, t: Target) -> Option<Kind> {
        // The policy and expectation mostly repeat an earlier line's: kept
        // in a small memo, unless their slots are filled already (a second
        // one, which the scan below refuses).
        let (keyed, memo): (Keyed, _) = match t {
            Target::Policy => ((SH_POLICY, policy_slot), Some(0)),
            Target::Expectation => ((SH_EXPECTATION, expectation_slot), Some(1)),
            Target::Response(w) => ((SH_RESPONSE + w, response_slot), None),
        };
        let memo = memo.filter(|_| self.s.slots(t).iter().all(Option::is_none));
        let start = self.i;
        if let Some(m) = memo
            && self.recall_small(m, t, depth).is_some()
        {
            return Some(Kind::Obj);
        }
        self.object(depth, Some(keyed), |s, slot, _, d| {
            let start = s.i;
            let kind = s.value(d)?;
            match slot {
                Some(slot) => Self::put(&mut s.s.slots(t)[slot], kind, start, s.i).map(|()| true),
                None => Some(false),
            }
        })?;
        if let Some(m) = memo {
            self.keep_small(m, t, depth, start);
        }
        Some(Kind::Obj)
    }

    /// If the object at `self.i` is one small memo `m` keeps, its slots go
    /// to `t`'s (all empty) and `self.i` past it. The object is looked for
    /// as the text up to the first closing brace: one without braces
    /// inside, the usual kind.
    fn recall_small(&mut self, m: usize, t: Target, depth: usize) -> Option<()> {
        let b = self.b;
        let at = self.i;
        let end = at + memchr::memchr(b'}', &b[at..b.len().min(at + SMALL_MAX)])? + 1;
        let text = &b[at..end];
        let at_entry = small_entry(text);
        let entry = self.s.small[m].entries.get(at_entry)?;
        if entry.text != text || entry.depth != depth {
            return None;
        }
        let kept = entry.slots;
        let to = u32::try_from(at).ok()?;
        for (slot, kept) in self.s.slots(t).iter_mut().zip(kept) {
            *slot = kept.map(|v| v.moved(0, to));
        }
        self.s.small_at[m] = Some(at_entry);
        self.i = end;
        Some(())
    }

    /// Keep the object just scanned from `start`, with `t`'s slots (all
    /// filled by it), in small memo `m`.
    fn keep_small(&mut self, m: usize, t: Target, depth: usize, start: usize) {
        let (b, end) = (self.b, self.i);
        if end - start > SMALL_MAX {
            return;
        }
        let text = &b[start..end];
        let from = start as u32;
        let mut slots = [None; N_EXP];
        for (kept, slot) in slots.iter_mut().zip(self.s.slots(t).iter()) {
            *kept = slot.map(|v| v.moved(from, 0));
        }
        let entries = &mut self.s.small[m].entries;
        if entries.is_empty() {
            entries.resize_with(SMALL_ENTRIES, SmallEntry::default);
        }
        let at_entry = small_entry(text);
        let entry = &mut entries[at_entry];
        entry.text.clear();
        entry.text.extend_from_slice(text);
        entry.depth = depth;
        entry.slots = slots;
        entry.reading = Reading::Unread;
        self.s.small_at[m] = Some(at_entry);
    }

    /// `source` (`w` 0) or `variant` (`w` 1).
    fn side(&mut self, depth: usize, w: usize) -> Option<Kind> {
        self.object(depth, Some((SH_SIDE + w, side_slot)), |s, slot, _, d| {
            let Some(slot) = slot else {
                return s.value(d).map(|_| false);
            };
            let start = s.i;
            let kind = match (slot, s.peek()?) {
                (S_STATE, _) => s.state(d, w)?,
                (S_RESPONSE, b'{') => s.fields(d + 1, Target::Response(w))?,
                _ => s.value(d)?,
            };
            Self::put(&mut s.s.side[w][slot], kind, start, s.i).map(|()| true)
        })?;
        Some(Kind::Obj)
    }

    /// A side's state: skipped when its text repeats the other side's state
    /// (an object, array or string, which end where their text ends); an
    /// object has its members recorded.
    fn state(&mut self, depth: usize, w: usize) -> Option<Kind> {
        let b = self.b;
        let start = self.i;
        if let Some(o) = self.s.side[1 - w][S_STATE]
            && matches!(o.kind, Kind::Obj | Kind::Arr | Kind::Str | Kind::Esc)
        {
            let text = o.span.bytes(b);
            if b[start..].starts_with(text) {
                self.i = start + text.len();
                return Some(o.kind);
            }
        }
        if self.peek()? != b'{' {
            return self.value(depth);
        }
        self.s.state_is_object[w] = true;
        let sc = &mut *self.s;
        if let Some(len) = sc.memo[w].recall(b, start, depth, &mut sc.members[w]) {
            let n = sc.members[w].len();
            sc.twins[w].resize(n, NONE);
            self.i = start + len;
            return Some(Kind::Obj);
        }
        let other = self.s.state_is_object[1 - w];
        // A side may spell its state twice (a line the fast path declines
        // later): only this object's members are kept.
        let first = self.s.members[w].len();
        let member = |s: &mut Self, _, (ks, ke): (usize, usize), d| {
            let vs = s.i;
            let twin = if other {
                s.same_as_other(w, (ks, ke))
            } else {
                None
            };
            if twin.is_none() {
                s.value(d)?;
            }
            s.s.members[w].push(Member {
                key: Span::new(ks, ke),
                value: Span::new(vs, s.i),
            });
            s.s.twins[w].push(twin.unwrap_or(NONE));
            Some(false)
        };
        let resumed = match self.s.side[1 - w][S_STATE] {
            Some(o) if other && first == 0 && o.kind == Kind::Obj => {
                self.take_leading(w, o, depth + 1)
            }
            _ => None,
        };
        match resumed {
            // After the members taken, at what follows the last one.
            Some(keys) => match self.token()? {
                b',' => {
                    self.i += 1;
                    self.members(depth + 1, None, keys, member)?;
                }
                b'}' => {
                    self.i += 1;
                    self.s.keys.truncate(keys.0);
                }
                _ => return None,
            },
            None => self.object(depth + 1, None, member)?,
        }
        let sc = &mut *self.s;
        sc.memo[w].keep(b, (start, self.i), depth, &sc.members[w][first..]);
        Some(Kind::Obj)
    }

    /// The leading members of the state object at `self.i`, side `w`'s,
    /// taken from the other side's state `o` (scanned before, an object at
    /// the same depth) where the two texts are the same: each member whose
    /// text, and the byte after it, lie within what the two share from
    /// their starts is that same valid member, with distinct keys, and the
    /// twin of the other's member in its place. Records them as the scan
    /// would, leaves `self.i` after the last, and gives the object's keys'
    /// start in `keys` and their bits (see [`Self::members`]); `None`,
    /// with nothing done, when not even the first member is shared.
    fn take_leading(&mut self, w: usize, o: Val, depth: usize) -> Option<(usize, u64)> {
        if depth > MAX_DEPTH {
            return None;
        }
        let b = self.b;
        let (os, oe) = (o.span.start as usize, o.span.end as usize);
        let start = self.i;
        let shared = os + common_prefix(o.span.bytes(b), &b[start..]);
        let others = &self.s.members[1 - w];
        // A member is taken if the byte after its value is shared too.
        let taken = others
            .iter()
            .take_while(|m| (m.value.end as usize) < shared && (m.value.end as usize) < oe)
            .count();
        if taken == 0 {
            return None;
        }
        let shift = u32::try_from(start.checked_sub(os)?).ok()?;
        u32::try_from(b.len()).ok()?;
        let base = self.s.keys.len();
        let mut seen = 0u64;
        for m in 0..taken {
            let mine = self.s.members[1 - w][m].moved(0, shift);
            let (ks, ke) = (mine.key.start as usize, mine.key.end as usize);
            let (p, bit) = key_bit(b, ks, ke);
            seen |= bit;
            self.s.keys.push(SeenKey {
                prefix: p,
                span: mine.key,
            });
            self.s.members[w].push(mine);
            self.s.twins[w].push(m as u32);
        }
        self.i = (self.s.members[1 - w][taken - 1].value.end + shift) as usize;
        Some((base, seen))
    }

    /// Whether the value at `self.i`, of the state member keyed `key`, has
    /// the same text as that member's value in the other side's state
    /// (scanned before); if so, steps over it. The other's value is valid
    /// JSON at the same depth, so an identical text is an identical, valid
    /// value, provided it ends where the other's ended: objects, arrays
    /// and strings end with their text, and a number or literal must be
    /// followed by what may follow a member's value. Gives that member's
    /// index.
    fn same_as_other(&mut self, w: usize, (ks, ke): (usize, usize)) -> Option<u32> {
        let b = self.b;
        let key = &b[ks..ke];
        let others = &self.s.members[1 - w];
        let at = self.s.members[w].len();
        // Most often the member in the same place, key and value written
        // alike: one comparison from the key's opening quote to the value's
        // end (the same length up to the value means the same key).
        if let Some(&o) = others.get(at)
            && o.value.start - o.key.start == (self.i - ks) as u32
        {
            // From the key's opening quote.
            let whole = Span {
                start: o.key.start - 1,
                end: o.value.end,
            };
            let text = whole.bytes(b);
            let end = ks - 1 + text.len();
            if ends_at(b, b[o.value.start as usize], end) && b[ks - 1..].starts_with(text) {
                self.i = end;
                return u32::try_from(at).ok();
            }
        }
        let same_key = |m: &Member| m.key.bytes(b) == key;
        let found = match others.get(at) {
            Some(m) if same_key(m) => Some(at),
            _ => others.iter().position(same_key),
        };
        let o = found?;
        let value = others[o].value;
        let text = value.bytes(b);
        let end = self.i + text.len();
        if ends_at(b, b[value.start as usize], end) && b[self.i..].starts_with(text) {
            self.i = end;
            u32::try_from(o).ok()
        } else {
            None
        }
    }
}

/// Whether a member's value that begins with `first`, copied from valid
/// text, would end at `b[end]` as it ended there: objects, arrays and
/// strings end with their text; a number or literal must be followed by
/// what may follow a member's value.
#[inline]
fn ends_at(b: &[u8], first: u8, end: usize) -> bool {
    matches!(first, b'{' | b'[' | b'"')
        || matches!(b.get(end), Some(b',' | b'}' | b' ' | b'\n' | b'\t' | b'\r'))
}
