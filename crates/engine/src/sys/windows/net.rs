//! TCP listeners on Windows: placeholder, filled below.
