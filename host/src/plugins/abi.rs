//! Which plugin ABI does a file declare? Read from the component's export
//! names (`mnemo:ner/provider@<version>`) before anything is compiled.

use super::PluginError;

/// ABI versions this host can run. `since_v0.1.0` is the released one.
pub const SUPPORTED: &[&str] = &["0.1.0"];
const EXPORT_PREFIX: &str = "mnemo:ner/provider@";

/// The declared versions of the provider interface (normally one).
pub fn declared_versions(origin: &str, bytes: &[u8]) -> Result<Vec<String>, PluginError> {
    if !bytes.starts_with(b"\0asm") {
        return Err(PluginError::NotWasm {
            origin: origin.into(),
        });
    }
    let mut versions = Vec::new();
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
                    if let Some(v) = export.name.name.strip_prefix(EXPORT_PREFIX) {
                        versions.push(v.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    Ok(versions)
}

/// Fails unless the file declares a supported provider ABI.
pub fn check(origin: &str, bytes: &[u8]) -> Result<String, PluginError> {
    let versions = declared_versions(origin, bytes)?;
    match versions.iter().find(|v| SUPPORTED.contains(&v.as_str())) {
        Some(v) => Ok(v.clone()),
        None => Err(PluginError::UnknownAbi {
            origin: origin.into(),
            found: if versions.is_empty() {
                "none".into()
            } else {
                versions.join(", ")
            },
            supported: SUPPORTED.join(", "),
        }),
    }
}
