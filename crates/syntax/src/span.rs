//! Source positions: byte spans into one of a program's source texts, resolved to
//! line and column only when a diagnostic is shown.

/// Which source text a span points into.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct SourceId(pub u16);

impl SourceId {
    /// The built-in prelude.
    pub const PRELUDE: SourceId = SourceId(0);
    /// The user's program.
    pub const USER: SourceId = SourceId(1);
    /// Terms made by a transformation, with no place in any source.
    pub const GENERATED: SourceId = SourceId(u16::MAX);
}

/// A half-open byte range `lo..hi` in one source.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Span {
    pub src: SourceId,
    pub lo: u32,
    pub hi: u32,
}

impl Span {
    /// The span of generated terms.
    pub const NONE: Span = Span {
        src: SourceId::GENERATED,
        lo: 0,
        hi: 0,
    };

    pub fn new(src: SourceId, lo: usize, hi: usize) -> Span {
        Span {
            src,
            lo: lo as u32,
            hi: hi as u32,
        }
    }

    pub fn is_none(self) -> bool {
        self.src == SourceId::GENERATED
    }

    /// The smallest span covering both (the first one if they are in different sources).
    pub fn to(self, other: Span) -> Span {
        if self.is_none() || self.src != other.src {
            return if self.is_none() { other } else { self };
        }
        Span {
            src: self.src,
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
        }
    }
}

/// 1-based line and column (in characters) of byte offset `pos` in `text`.
pub fn line_col(text: &str, pos: usize) -> (usize, usize) {
    let pos = pos.min(text.len());
    let before = &text[..floor_char_boundary(text, pos)];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    (line, col)
}

fn floor_char_boundary(text: &str, mut pos: usize) -> usize {
    while !text.is_char_boundary(pos) {
        pos -= 1;
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_are_one_based() {
        let text = "ab\ncd\n\nxé y";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 4), (2, 2));
        assert_eq!(line_col(text, 6), (3, 1));
        assert_eq!(line_col(text, 11), (4, 4));
        assert_eq!(line_col(text, 999), (4, 5));
    }
}
