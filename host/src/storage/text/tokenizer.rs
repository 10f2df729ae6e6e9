//! FTS5's own tokenizer, called directly: the derived full-text index
//! (`text/mod.rs`) must split text into exactly the tokens the FTS5 tables
//! hold — `porter unicode61 remove_diacritics 2`, the schema's
//! `tokenize=` — or its BM25 would rank differently from theirs. Rather
//! than re-implement unicode61's case folding and diacritic tables and
//! FTS5's Porter stemmer, this asks SQLite for the tokenizer through the
//! `fts5_api` (`SELECT fts5(?1)` with a bound pointer, as fts5.h documents)
//! on a private in-memory connection, and runs it.

use std::ffi::{CString, c_char, c_int, c_void};
use std::ptr;

use anyhow::{Context, bail};
use rusqlite::Connection;
use rusqlite::ffi;

/// The schema's `tokenize=` option, split as FTS5 splits it: the porter
/// stemmer wrapping unicode61, which folds case and strips diacritics.
const TOKENIZER: &str = "porter";
const TOKENIZER_ARGS: [&str; 3] = ["unicode61", "remove_diacritics", "2"];

/// How the text is tokenized (fts5.h's `FTS5_TOKENIZE_*`); these two
/// tokenizers treat both alike, the flag is passed as FTS5 passes it.
#[derive(Clone, Copy)]
pub enum Purpose {
    Query = 0x0001,
    Document = 0x0004,
}

/// One instance of the tokenizer. It lives as long as the connection whose
/// FTS5 module made it, and is used by one thread at a time (`&mut self`).
pub struct Tokenizer {
    module: ffi::fts5_tokenizer,
    instance: *mut ffi::Fts5Tokenizer,
    // Dropped after `instance` is deleted (see `Drop`): the tokenizer's
    // code and parent tokenizer belong to this connection's FTS5 module.
    _conn: Connection,
}

// SAFETY: the instance is only reached through `&mut self` (one thread at a
// time), and SQLite is built thread-safe (serialized); neither the instance
// nor the connection keeps thread-local state.
unsafe impl Send for Tokenizer {}

impl Tokenizer {
    pub fn new() -> anyhow::Result<Self> {
        let conn = Connection::open_in_memory().context("opening the tokenizer's connection")?;
        let api = fts5_api(&conn)?;
        let name = CString::new(TOKENIZER)?;
        let args: Vec<CString> = TOKENIZER_ARGS
            .iter()
            .map(|a| CString::new(*a))
            .collect::<Result<_, _>>()?;
        let mut argv: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
        let mut user: *mut c_void = ptr::null_mut();
        let mut module = ffi::fts5_tokenizer {
            xCreate: None,
            xDelete: None,
            xTokenize: None,
        };
        // SAFETY: `api` is the live connection's FTS5 API; the name and
        // arguments are NUL-terminated and outlive both calls.
        unsafe {
            let Some(find) = (*api).xFindTokenizer else {
                bail!("this SQLite's FTS5 cannot look up tokenizers");
            };
            if find(api, name.as_ptr(), &mut user, &mut module) != ffi::SQLITE_OK {
                bail!("FTS5 has no {TOKENIZER} tokenizer");
            }
            let Some(create) = module.xCreate else {
                bail!("the {TOKENIZER} tokenizer cannot be created");
            };
            let mut instance: *mut ffi::Fts5Tokenizer = ptr::null_mut();
            let rc = create(user, argv.as_mut_ptr(), argv.len() as c_int, &mut instance);
            if rc != ffi::SQLITE_OK || instance.is_null() {
                bail!("creating the {TOKENIZER} tokenizer failed ({rc})");
            }
            Ok(Self {
                module,
                instance,
                _conn: conn,
            })
        }
    }

    /// Calls `each` with every token of `text`, in order.
    pub fn tokens(&mut self, text: &str, purpose: Purpose, mut each: impl FnMut(&str)) {
        let Some(tokenize) = self.module.xTokenize else {
            return;
        };
        // A text longer than an int can say is cut where FTS5 would refuse
        // it; no stored text comes near 2 GiB.
        let n = text.len().min(c_int::MAX as usize) as c_int;
        let mut sink: &mut dyn FnMut(&str) = &mut each;
        // SAFETY: the instance is live; `text` outlives the call; the
        // context pointer is `sink`, which `on_token` reads back as such.
        unsafe {
            tokenize(
                self.instance,
                (&mut sink as *mut &mut dyn FnMut(&str)).cast(),
                purpose as c_int,
                text.as_ptr().cast(),
                n,
                Some(on_token),
            );
        }
    }

    /// The tokens of `text` as a list.
    pub fn split(&mut self, text: &str, purpose: Purpose) -> Vec<String> {
        let mut out = Vec::new();
        self.tokens(text, purpose, |t| out.push(t.to_string()));
        out
    }
}

impl Drop for Tokenizer {
    fn drop(&mut self) {
        if let Some(delete) = self.module.xDelete {
            // SAFETY: made by this module's xCreate, deleted once.
            unsafe { delete(self.instance) };
        }
    }
}

/// FTS5's token callback: hands each token to the closure behind `ctx`.
unsafe extern "C" fn on_token(
    ctx: *mut c_void,
    _flags: c_int,
    token: *const c_char,
    n: c_int,
    _start: c_int,
    _end: c_int,
) -> c_int {
    if token.is_null() || n < 0 {
        return ffi::SQLITE_OK;
    }
    // SAFETY: `ctx` is the `&mut dyn FnMut` that `tokens` passed; the token
    // is `n` bytes FTS5 owns for the duration of the call.
    unsafe {
        let sink = &mut *ctx.cast::<&mut dyn FnMut(&str)>();
        let bytes = std::slice::from_raw_parts(token.cast::<u8>(), n as usize);
        // unicode61 emits UTF-8 (its input's encoding); anything else is
        // replaced, never skipped, so the token counts stay FTS5's.
        sink(&String::from_utf8_lossy(bytes));
    }
    ffi::SQLITE_OK
}

/// The connection's `fts5_api`, through `SELECT fts5(?1)` with a pointer
/// bound under the type name "fts5_api_ptr" (fts5.h, "Extension API").
fn fts5_api(conn: &Connection) -> anyhow::Result<*mut ffi::fts5_api> {
    let mut api: *mut ffi::fts5_api = ptr::null_mut();
    let kind = c"fts5_api_ptr";
    // SAFETY: a statement on this live connection, finalized before return;
    // the bound pointer is `api`, which outlives the step.
    unsafe {
        let db = conn.handle();
        let mut stmt: *mut ffi::sqlite3_stmt = ptr::null_mut();
        let sql = c"SELECT fts5(?1)";
        if ffi::sqlite3_prepare_v2(db, sql.as_ptr(), -1, &mut stmt, ptr::null_mut())
            != ffi::SQLITE_OK
        {
            bail!("this SQLite has no FTS5");
        }
        ffi::sqlite3_bind_pointer(
            stmt,
            1,
            (&mut api as *mut *mut ffi::fts5_api).cast(),
            kind.as_ptr(),
            None,
        );
        ffi::sqlite3_step(stmt);
        ffi::sqlite3_finalize(stmt);
    }
    if api.is_null() {
        bail!("this SQLite's FTS5 gave no API");
    }
    Ok(api)
}
