//! Message content with images across the two shapes: OpenAI content parts
//! (`text`, `image_url` with a `data:` or `http(s)` URL) and Anthropic
//! content blocks (`text`, `image` with a `base64` or `url` source).

use serde_json::{json, Value};

/// Anthropic content blocks of an OpenAI user message's content (a string,
/// or text and image parts); `None` when a part has no counterpart (audio,
/// files, an image URL that is neither `data:` nor `http(s)`).
pub(crate) fn anthropic_blocks(content: Option<&Value>) -> Option<Vec<Value>> {
    match content {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::String(text)) if text.is_empty() => Some(Vec::new()),
        Some(Value::String(text)) => Some(vec![json!({"type": "text", "text": text})]),
        Some(Value::Array(parts)) => parts.iter().map(anthropic_block).collect(),
        Some(_) => None,
    }
}

fn anthropic_block(part: &Value) -> Option<Value> {
    match part.get("type").and_then(Value::as_str)? {
        "text" => {
            let text = part.get("text")?.as_str()?;
            Some(json!({"type": "text", "text": text}))
        }
        "image_url" => {
            let url = match part.get("image_url")? {
                Value::String(url) => url.as_str(),
                image => image.get("url")?.as_str()?,
            };
            Some(json!({"type": "image", "source": image_source(url)?}))
        }
        _ => None,
    }
}

/// An image URL as an Anthropic image source.
fn image_source(url: &str) -> Option<Value> {
    if let Some(rest) = url.strip_prefix("data:") {
        let (media_type, data) = rest.split_once(";base64,")?;
        return Some(json!({"type": "base64", "media_type": media_type, "data": data}));
    }
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    (lower.starts_with("https://") || lower.starts_with("http://"))
        .then(|| json!({"type": "url", "url": url}))
}

/// An Anthropic image block as an OpenAI `image_url` part; `None` for a
/// source with no URL form (a file id).
pub(crate) fn openai_image_part(block: &Value) -> Option<Value> {
    let source = block.get("source")?;
    let url = match source.get("type").and_then(Value::as_str)? {
        "base64" => format!(
            "data:{};base64,{}",
            source.get("media_type")?.as_str()?,
            source.get("data")?.as_str()?
        ),
        "url" => source.get("url")?.as_str()?.to_owned(),
        _ => return None,
    };
    Some(json!({"type": "image_url", "image_url": {"url": url}}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_translate_both_ways() {
        let content = json!([
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}}
        ]);
        let blocks = anthropic_blocks(Some(&content)).unwrap();
        assert_eq!(blocks[0]["text"], "what is this?");
        assert_eq!(blocks[1]["source"]["media_type"], "image/png");
        assert_eq!(blocks[1]["source"]["data"], "iVBORw0KGgo=");
        assert_eq!(
            blocks[2]["source"],
            json!({"type": "url", "url": "https://example.com/cat.jpg"})
        );
        let back = openai_image_part(&blocks[1]).unwrap();
        assert_eq!(
            back["image_url"]["url"],
            "data:image/png;base64,iVBORw0KGgo="
        );
        assert_eq!(
            openai_image_part(&blocks[2]).unwrap()["image_url"]["url"],
            "https://example.com/cat.jpg"
        );
    }

    #[test]
    fn parts_without_a_counterpart_are_refused() {
        let audio =
            json!([{"type": "input_audio", "input_audio": {"data": "..", "format": "wav"}}]);
        assert_eq!(anthropic_blocks(Some(&audio)), None);
        let ftp = json!([{"type": "image_url", "image_url": {"url": "ftp://x/y.png"}}]);
        assert_eq!(anthropic_blocks(Some(&ftp)), None);
        let file = json!({"type": "image", "source": {"type": "file", "file_id": "f1"}});
        assert_eq!(openai_image_part(&file), None);
    }
}
