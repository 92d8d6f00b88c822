//! Transfers: read, write, copy, fill and rectangles between host and buffers, direct and staged.

mod basic;
mod rect;
mod staged;
