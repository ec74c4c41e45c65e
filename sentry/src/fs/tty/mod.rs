//! The sentry's terminals: termios, the line discipline and
//! pseudo-terminal pairs.
mod ioctl;
pub(crate) mod line_discipline;
pub(crate) mod terminal;
pub(crate) mod termios;
