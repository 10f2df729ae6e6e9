//! Which plugin ABI does a file declare? Read from the component's export
//! names (`mnemo:ner/provider@<version>`, `mnemo:llm/provider@<version>`)
//! before anything is compiled.

use super::PluginError;

/// The two kinds of provider a plugin can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Ner,
    Llm,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ner => "ner",
            Self::Llm => "llm",
        }
    }

    fn export_prefix(self) -> &'static str {
        match self {
            Self::Ner => "mnemo:ner/provider@",
            Self::Llm => "mnemo:llm/provider@",
        }
    }

    /// ABI versions of this kind the host can run; `since_v0.1.0` is the
    /// released one of each (`wit/ner/`, `wit/llm/`).
    pub const fn supported(self) -> &'static [&'static str] {
        match self {
            Self::Ner => &["0.1.0"],
            Self::Llm => &["0.1.0"],
        }
    }
}

/// The provider interfaces a file exports, with their versions (normally one).
pub fn declared(origin: &str, bytes: &[u8]) -> Result<Vec<(Kind, String)>, PluginError> {
    if !bytes.starts_with(b"\0asm") {
        return Err(PluginError::NotWasm {
            origin: origin.into(),
        });
    }
    let mut found = Vec::new();
    let mut first = true;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|e| PluginError::Malformed {
            origin: origin.into(),
            message: e.to_string(),
        })?;
        match payload {
            wasmparser::Payload::Version { encoding, .. } if first => {
                first = false;
                if encoding != wasmparser::Encoding::Component {
                    return Err(PluginError::NotAComponent {
                        origin: origin.into(),
                    });
                }
            }
            wasmparser::Payload::ComponentExportSection(reader) => {
                for export in reader {
                    let export = export.map_err(|e| PluginError::Malformed {
                        origin: origin.into(),
                        message: e.to_string(),
                    })?;
                    for kind in [Kind::Ner, Kind::Llm] {
                        if let Some(v) = export.name.name.strip_prefix(kind.export_prefix()) {
                            found.push((kind, v.to_string()));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(found)
}

/// The kind and supported ABI version a file declares; fails unless it
/// declares one this host can run (of `only`, when given).
pub fn check(
    origin: &str,
    bytes: &[u8],
    only: Option<Kind>,
) -> Result<(Kind, String), PluginError> {
    let declared = declared(origin, bytes)?;
    let usable = declared.iter().find(|(kind, v)| {
        only.is_none_or(|o| o == *kind) && kind.supported().contains(&v.as_str())
    });
    match usable {
        Some((kind, v)) => Ok((*kind, v.clone())),
        None => {
            let supported: Vec<String> = [Kind::Ner, Kind::Llm]
                .into_iter()
                .filter(|k| only.is_none_or(|o| o == *k))
                .flat_map(|k| {
                    k.supported()
                        .iter()
                        .map(move |v| format!("{} {v}", k.as_str()))
                })
                .collect();
            Err(PluginError::UnknownAbi {
                origin: origin.into(),
                found: if declared.is_empty() {
                    "none".into()
                } else {
                    declared
                        .iter()
                        .map(|(k, v)| format!("{} {v}", k.as_str()))
                        .collect::<Vec<_>>()
                        .join(", ")
                },
                supported: supported.join(", "),
            })
        }
    }
}
