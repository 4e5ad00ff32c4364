//! Limits and instance reuse.
