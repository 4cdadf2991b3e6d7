//! Exact token counts for OpenAI encodings, offline: the `tiktoken` crate embeds the two
//! vocabularies zstd-compressed and builds each on first use (tens of milliseconds).

/// Encodings with exact counts.
pub const ENCODINGS: &[&str] = &["cl100k_base", "o200k_base"];

/// Number of tokens of `text` in `encoding`, or `None` for an unknown encoding.
pub fn count_tokens(text: &str, encoding: &str) -> Option<usize> {
    if !ENCODINGS.contains(&encoding) {
        return None;
    }
    tiktoken::get_encoding(encoding).map(|enc| enc.count(text))
}
