//! Fills a [`crate::DeviceProfile`] from a live device (feature `probe`).
