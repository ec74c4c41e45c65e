//! The sentry's terminals: termios, the line discipline and
//! pseudo-terminal pairs.
mod ioctl;
pub mod line_discipline;
pub mod terminal;
pub mod termios;
