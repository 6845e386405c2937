//! Setting the forwarder up: the configuration read from the environment
//! ([`config`], with [`env`](mod@env)), the AWS names it holds ([`aws_names`]), the
//! credentials ([`credentials`]: the assumed role), the queue ([`queue`]),
//! the cold start that puts them together ([`startup`], [`init_error`]), the
//! errors they fail with ([`error`]) and the allocator's options
//! ([`allocator`]).

#[cfg(feature = "mimalloc")]
#[allow(unsafe_code)] // mimalloc's options are set through its C API
pub mod allocator;
pub mod aws_names;
pub mod config;
pub mod credentials;
pub mod env;
pub mod error;
pub mod init_error;
pub mod queue;
pub mod startup;
