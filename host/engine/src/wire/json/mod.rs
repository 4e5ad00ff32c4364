//! JSON text read without building a tree: a cursor (`scan`), typed
//! readers of members (`readers`), and an object's members handed over one
//! by one (`members`). Each one-pass reader built on them declines what it
//! does not know, and its caller falls back to the reader over a tree.

pub(crate) mod members;
pub(crate) mod readers;
pub(crate) mod scan;
pub(crate) mod whole_reply;
