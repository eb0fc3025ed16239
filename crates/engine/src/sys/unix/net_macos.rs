//! TCP listeners on macOS: placeholder, filled below.
