//! Setting the forwarder up, in the order a cold start runs: the
//! configuration read from the environment ([`config`], with
//! [`env`](mod@env); the AWS names it holds, [`aws_names`]), the AWS
//! settings and their credentials ([`credentials`]: the assumed role), the
//! SQS client and the send settings ([`client`]), then the cold start that
//! puts them together ([`startup`], a failed one reported by
//! [`init_error`]). [`error`] holds the errors they fail with, [`allocator`]
//! the functions' allocator and when it returns memory, [`on_first_use`]
//! the clients a start does not build until they are used.

// Unsafe allowed: mimalloc's C API (its options, its purge) and a
// `GlobalAlloc` passed through to it.
#[cfg(feature = "mimalloc")]
#[allow(unsafe_code)]
pub mod allocator;
pub mod aws_names;
#[cfg(feature = "sdk")]
pub mod client;
pub mod config;
#[cfg(feature = "sdk")]
pub mod credentials;
pub mod env;
pub mod error;
#[cfg(feature = "lambda")]
pub mod init_error;
pub mod on_first_use;
#[cfg(feature = "sdk")]
pub mod startup;
#[cfg(feature = "sdk")]
pub mod targets;
