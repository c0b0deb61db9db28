//! util
