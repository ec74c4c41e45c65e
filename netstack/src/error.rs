//! What a netstack operation can fail with; the sentry maps each to the
//! errno Linux returns in the same case.

/// A failed endpoint operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("operation would block")]
    WouldBlock,
    #[error("connection in progress")]
    InProgress,
    #[error("operation already in progress")]
    Already,
    #[error("software caused connection abort")]
    ConnAborted,
    #[error("address family not supported by protocol")]
    AfNotSupported,
    #[error("address already in use")]
    AddrInUse,
    #[error("address not available")]
    AddrNotAvailable,
    #[error("connection refused")]
    ConnRefused,
    #[error("connection reset by peer")]
    ConnReset,
    #[error("transport endpoint is already connected")]
    IsConnected,
    #[error("transport endpoint is not connected")]
    NotConnected,
    #[error("invalid argument")]
    Invalid,
    #[error("network is unreachable")]
    NetUnreachable,
    #[error("message too long")]
    MsgSize,
    #[error("broken pipe")]
    BrokenPipe,
    #[error("destination address required")]
    DestAddrRequired,
    #[error("no such device")]
    NoDevice,
    #[error("no buffer space available")]
    NoBufs,
    #[error("cannot allocate memory")]
    NoMemory,
    #[error("permission denied")]
    Access,
}
