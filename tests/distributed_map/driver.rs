//! A stand-in for Step Functions' Distributed Map, only for the tests: it
//! reads an object as the state machine's `ItemReader` does (JSON lines, or
//! CSV with its header in the first row), gives each item the shape the
//! template's `ItemSelector` gives it (`{"index", "value"}`), batches the
//! items as `ItemBatcher` does (at most `MaxItemsPerBatch` items and
//! `MaxInputBytesPerBatch` bytes of batch input, `BatchInput` included),
//! and hands each batch to the built s3-to-sqs binary through a local
//! Lambda runtime API, as the map's Lambda task does (`Payload.$: "$"`).

use std::path::PathBuf;
use std::time::SystemTime;

use serde_json::{Value, json};
use sqs_forwarder::test_support::runtime_api::{FunctionProcess, RuntimeApi};

/// `ReaderConfig.InputType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `JSONL`: each line one JSON value.
    Jsonl,
    /// `CSV` with `CSVHeaderLocation: FIRST_ROW`: each row an object of
    /// header to value (strings).
    Csv,
}

/// The items of an object, as `ItemReader` reads them. Blank JSON lines
/// are skipped; a line that is not JSON is an error naming it (the map run
/// would fail).
pub fn read_items(format: Format, bytes: &[u8]) -> Result<Vec<Value>, String> {
    match format {
        Format::Jsonl => {
            let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
            let mut items = Vec::new();
            for (n, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let value: Value = serde_json::from_str(line)
                    .map_err(|e| format!("line {}: not JSON: {e}", n + 1))?;
                items.push(value);
            }
            Ok(items)
        }
        Format::Csv => {
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(true)
                .from_reader(bytes);
            let headers = reader.headers().map_err(|e| e.to_string())?.clone();
            let mut items = Vec::new();
            for record in reader.records() {
                let record = record.map_err(|e| e.to_string())?;
                let row: serde_json::Map<String, Value> = headers
                    .iter()
                    .zip(record.iter())
                    .map(|(h, v)| (h.to_owned(), Value::String(v.to_owned())))
                    .collect();
                items.push(Value::Object(row));
            }
            Ok(items)
        }
    }
}

/// `ItemBatcher`'s limits.
#[derive(Debug, Clone, Copy)]
pub struct Batching {
    /// `MaxItemsPerBatch`.
    pub max_items: usize,
    /// `MaxInputBytesPerBatch`: the batch input's JSON, `BatchInput` included.
    pub max_bytes: usize,
}

/// The batches of `items`, each `{"Items": [{"index", "value"}...],
/// "BatchInput": batch_input}` with items in order, each as large as both
/// limits allow; an item too large for a batch alone is an error (the map
/// run would fail).
pub fn batches(
    items: &[Value],
    batch_input: &Value,
    limits: Batching,
) -> Result<Vec<Value>, String> {
    let empty = json!({ "Items": [], "BatchInput": batch_input })
        .to_string()
        .len();
    let mut out = Vec::new();
    let mut current: Vec<Value> = Vec::new();
    let mut size = empty;
    let flush = |current: &mut Vec<Value>, out: &mut Vec<Value>| {
        out.push(json!({ "Items": std::mem::take(current), "BatchInput": batch_input }));
    };
    for (index, value) in items.iter().enumerate() {
        let selected = json!({ "index": index, "value": value });
        let len = selected.to_string().len();
        if empty + len > limits.max_bytes {
            return Err(format!(
                "item {index} is {len} bytes: alone it exceeds MaxInputBytesPerBatch {}",
                limits.max_bytes
            ));
        }
        let comma = usize::from(!current.is_empty());
        if !current.is_empty()
            && (current.len() == limits.max_items || size + comma + len > limits.max_bytes)
        {
            flush(&mut current, &mut out);
            size = empty;
        }
        size += usize::from(!current.is_empty()) + len;
        current.push(selected);
    }
    if !current.is_empty() {
        flush(&mut current, &mut out);
    }
    Ok(out)
}

/// The built s3-to-sqs binary, next to this test's own (`target/debug`).
/// `cargo test --workspace` builds it; run alone, this test needs
/// `cargo build -p s3-to-sqs` first. A binary older than the function's
/// sources would test old code: that is refused, saying so.
pub fn function_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let binary = dir.join("s3-to-sqs");
    let built = std::fs::metadata(&binary)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| {
            panic!(
                "{} is not built: run `cargo build -p s3-to-sqs` (cargo test --workspace builds it)",
                binary.display()
            )
        });
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let newest = newest_source(&[
        root.join("functions/s3-to-sqs/src"),
        root.join("shared/src"),
    ]);
    assert!(
        newest <= built,
        "{} is older than the function's sources: run `cargo build -p s3-to-sqs`",
        binary.display()
    );
    binary
}

fn newest_source(dirs: &[PathBuf]) -> SystemTime {
    let mut newest = SystemTime::UNIX_EPOCH;
    let mut stack: Vec<PathBuf> = dirs.to_vec();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs")
                && let Ok(modified) = entry.metadata().and_then(|m| m.modified())
            {
                newest = newest.max(modified);
            }
        }
    }
    newest
}

/// The built function running against a local runtime API, as the map's
/// Lambda task invokes it.
pub struct Function {
    /// The runtime API the batches go through.
    pub api: RuntimeApi,
    _process: FunctionProcess,
}

impl Function {
    /// Start the binary with `env` (its configuration and AWS settings).
    pub async fn start(env: &[(&str, &str)]) -> Function {
        let api = RuntimeApi::start().await;
        let binary = function_binary();
        let process = FunctionProcess::spawn(&binary.to_string_lossy(), &api, env);
        Function {
            api,
            _process: process,
        }
    }
}
