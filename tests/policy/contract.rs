//! The component honours the contract: it imports exactly what the WIT world
//! declares (nothing, and certainly no WASI) and describes itself.
