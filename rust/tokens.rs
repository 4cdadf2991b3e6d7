//! Exact token counts for OpenAI encodings, offline (the tables are embedded by `bpe-openai`).

/// Encodings with exact counts.
pub const ENCODINGS: &[&str] = &["cl100k_base", "o200k_base"];

/// Number of tokens of `text` in `encoding`, or `None` for an unknown encoding.
pub fn count_tokens(text: &str, encoding: &str) -> Option<usize> {
    match encoding {
        "cl100k_base" => Some(bpe_openai::cl100k_base().count(text)),
        "o200k_base" => Some(bpe_openai::o200k_base().count(text)),
        _ => None,
    }
}
