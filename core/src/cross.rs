//! `Cross`: the one conversion between a domain type and its generated WIT
//! binding, in either direction. `impl_cross!` implements it for every
//! record, enum and variant the model lists, field by field, for whichever
//! bindings are in scope where it is invoked — the guest's (`wasm/`) and
//! the host's (`mnemo-host`'s `runtime/convert.rs`) — so a record's fields
//! are written in one place.

/// Converts a value into its counterpart on the other side of the boundary.
pub trait Cross<T> {
    fn cross(self) -> T;
}

macro_rules! same {
    ($($t:ty),*) => { $(
        impl Cross<$t> for $t {
            fn cross(self) -> $t { self }
        }
    )* };
}
same!((), String, bool, u8, u32, u64, i64, f32);

impl<A: Cross<B>, B> Cross<Vec<B>> for Vec<A> {
    fn cross(self) -> Vec<B> {
        self.into_iter().map(Cross::cross).collect()
    }
}

impl<A: Cross<B>, B> Cross<Option<B>> for Option<A> {
    fn cross(self) -> Option<B> {
        self.map(Cross::cross)
    }
}

impl<A: Cross<X>, B: Cross<Y>, X, Y> Cross<(X, Y)> for (A, B) {
    fn cross(self) -> (X, Y) {
        (self.0.cross(), self.1.cross())
    }
}

impl<A: Cross<B>, B, E: Cross<F>, F> Cross<Result<B, F>> for Result<A, E> {
    fn cross(self) -> Result<B, F> {
        self.map(Cross::cross).map_err(Cross::cross)
    }
}

/// Implements [`Cross`] both ways for every item of a list macro
/// (`stored_records!`, `engine_records!`, `enums!`, `variants!`), against
/// the binding modules named by the list (`types`, `storage`, `embedding`,
/// `llm`, `engine`), which must be in scope where the list is invoked.
#[macro_export]
macro_rules! impl_cross {
    (records $( $(#[$m:meta])* $iface:ident :: $name:ident {
        $( $(#[$fm:meta])* $f:ident : $t:ty ),* $(,)?
    } )*) => { $(
        impl $crate::Cross<$iface::$name> for $crate::model::$name {
            fn cross(self) -> $iface::$name {
                $iface::$name { $( $f: $crate::Cross::cross(self.$f), )* }
            }
        }
        impl $crate::Cross<$crate::model::$name> for $iface::$name {
            fn cross(self) -> $crate::model::$name {
                $crate::model::$name { $( $f: $crate::Cross::cross(self.$f), )* }
            }
        }
    )* };
    (variants $( $(#[$m:meta])* $iface:ident :: $name:ident {
        $( $v:ident ( $t:ty ) ),+ $(,)?
    } )*) => { $(
        impl $crate::Cross<$iface::$name> for $crate::model::$name {
            fn cross(self) -> $iface::$name {
                match self { $( Self::$v(x) => $iface::$name::$v($crate::Cross::cross(x)), )+ }
            }
        }
        impl $crate::Cross<$crate::model::$name> for $iface::$name {
            fn cross(self) -> $crate::model::$name {
                match self { $( Self::$v(x) => $crate::model::$name::$v($crate::Cross::cross(x)), )+ }
            }
        }
    )* };
    (enums $( $(#[$m:meta])* $iface:ident :: $name:ident {
        $( $v:ident => $s:literal ),+ $(,)?
    } )*) => { $(
        impl $crate::Cross<$iface::$name> for $crate::model::$name {
            fn cross(self) -> $iface::$name {
                match self { $( Self::$v => $iface::$name::$v, )+ }
            }
        }
        impl $crate::Cross<$crate::model::$name> for $iface::$name {
            fn cross(self) -> $crate::model::$name {
                match self { $( Self::$v => $crate::model::$name::$v, )+ }
            }
        }
    )* };
    (error $iface:ident :: $name:ident) => {
        impl $crate::Cross<$iface::$name> for $crate::CoreError {
            fn cross(self) -> $iface::$name {
                use $crate::CoreError as C;
                match self {
                    C::InvalidInput(m) => $iface::$name::InvalidInput(m),
                    C::NotFound(m) => $iface::$name::NotFound(m),
                    C::Conflict(m) => $iface::$name::Conflict(m),
                    C::Storage(m) => $iface::$name::Storage(m),
                    C::Embedding(m) => $iface::$name::Embedding(m),
                    C::Llm(m) => $iface::$name::Llm(m),
                    C::Ner(m) => $iface::$name::Ner(m),
                    C::Unavailable(m) => $iface::$name::Unavailable(m),
                }
            }
        }
        impl $crate::Cross<$crate::CoreError> for $iface::$name {
            fn cross(self) -> $crate::CoreError {
                use $crate::CoreError as C;
                match self {
                    Self::InvalidInput(m) => C::InvalidInput(m),
                    Self::NotFound(m) => C::NotFound(m),
                    Self::Conflict(m) => C::Conflict(m),
                    Self::Storage(m) => C::Storage(m),
                    Self::Embedding(m) => C::Embedding(m),
                    Self::Llm(m) => C::Llm(m),
                    Self::Ner(m) => C::Ner(m),
                    Self::Unavailable(m) => C::Unavailable(m),
                }
            }
        }
    };
}

/// Invokes `impl_cross!` for the whole contract: every list, and the error.
#[macro_export]
macro_rules! cross_contract {
    () => {
        $crate::stored_records!(impl_cross);
        $crate::engine_records!(impl_cross);
        $crate::llm_records!(impl_cross);
        $crate::topic_records!(impl_cross);
        $crate::enums!(impl_cross);
        $crate::variants!(impl_cross);
        $crate::impl_cross!(error types::Error);
    };
}
