//! `define!`: turns the lists of `records.rs`, `api.rs` and `enums.rs` into
//! Rust types. Records get `pub` fields; enums get `ALL`, `as_str`,
//! `FromStr` (case-insensitive, a typed error naming the accepted values)
//! and `Display`. With the `fuzzing` feature every type is `Arbitrary`, so
//! the fuzz targets (`fuzz/`) build any record the WIT boundary carries;
//! with `schema` every type is `JsonSchema`, so a host's typed surfaces
//! (the MCP tools' input schemas) are derived from the engine's own types.

macro_rules! define {
    (records $( $(#[$m:meta])* $iface:ident :: $name:ident {
        $( $(#[$fm:meta])* $f:ident : $t:ty ),* $(,)?
    } )*) => {
        $(
            $(#[$m])*
            #[cfg_attr(feature = "fuzzing", derive(arbitrary::Arbitrary))]
            #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
            pub struct $name { $( $(#[$fm])* pub $f: $t, )* }
        )*
    };
    (variants $( $(#[$m:meta])* $iface:ident :: $name:ident {
        $( $v:ident ( $t:ty ) ),+ $(,)?
    } )*) => {
        $(
            $(#[$m])*
            #[cfg_attr(feature = "fuzzing", derive(arbitrary::Arbitrary))]
            #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
            pub enum $name { $( $v($t), )+ }
        )*
    };
    (enums $( $(#[$m:meta])* $iface:ident :: $name:ident {
        $( $variant:ident => $s:literal ),+ $(,)?
    } )*) => { $(
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[cfg_attr(feature = "fuzzing", derive(arbitrary::Arbitrary))]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        #[serde(rename_all = "kebab-case")]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $s),+ }
            }
        }

        impl std::str::FromStr for $name {
            type Err = crate::error::CoreError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s.to_ascii_lowercase().as_str() {
                    $($s => Ok($name::$variant),)+
                    other => Err(crate::error::CoreError::InvalidInput(format!(
                        concat!("unknown ", stringify!($name), " `{}`; expected one of: {}"),
                        other,
                        [$($s),+].join(", ")
                    ))),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )* };
}
