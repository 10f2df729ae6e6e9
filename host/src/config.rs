//! Configuration: where the data lives and which providers run. Defaults work
//! offline: a SQLite file in the data directory, the local embedder, LLM off.

use std::path::PathBuf;

/// Which embedding provider the host runs.
#[derive(Debug, Clone, PartialEq)]
pub enum EmbedderChoice {
    /// Hashed bag of words, no model needed.
    Hash { dimension: usize },
}

#[derive(Debug, Clone)]
pub struct Config {
    pub data_dir: PathBuf,
    pub db_path: PathBuf,
    /// Where compiled components are cached; `None` compiles every start.
    pub cache_dir: Option<PathBuf>,
    pub embedder: EmbedderChoice,
}

/// Dimension of the default embedder (all-MiniLM-L6-v2's).
pub const DEFAULT_DIMENSION: usize = 384;

impl Config {
    /// The data directory: `$MNEMO_DATA_DIR`, else `$XDG_DATA_HOME/mnemo`,
    /// else `~/.local/share/mnemo`, else `./.mnemo`.
    pub fn default_data_dir() -> PathBuf {
        if let Some(d) = std::env::var_os("MNEMO_DATA_DIR") {
            return PathBuf::from(d);
        }
        if let Some(d) = std::env::var_os("XDG_DATA_HOME") {
            return PathBuf::from(d).join("mnemo");
        }
        match std::env::var_os("HOME") {
            Some(h) => PathBuf::from(h).join(".local/share/mnemo"),
            None => PathBuf::from(".mnemo"),
        }
    }

    /// Defaults for a database file (the data directory holds the caches).
    pub fn for_db(db_path: Option<PathBuf>) -> Self {
        let data_dir = Self::default_data_dir();
        let db_path = db_path.unwrap_or_else(|| data_dir.join("memory.db"));
        Self {
            cache_dir: Some(data_dir.join("cache")),
            data_dir,
            db_path,
            embedder: EmbedderChoice::Hash {
                dimension: DEFAULT_DIMENSION,
            },
        }
    }
}
