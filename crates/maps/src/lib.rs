//! Compact maps (being written).
