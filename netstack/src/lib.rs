//! The husk netstack: IP sockets, the egress gateway and its policy, the
//! DNS resolver and flow records. Networking arrives in a later change; the
//! crate exists now so the dependency direction is fixed from the start.
