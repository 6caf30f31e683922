// SPDX-License-Identifier: Apache-2.0
// The Unix socket of pmon serve: where it lives by default, how it is made
// safe to listen on, and how a client reaches it.
#pragma once

#include <expected>
#include <string>

#include "confine/error.h"
#include "sys/fd.h"

namespace pmon::serve {

// $PMON_SOCKET when set (clients only), else $XDG_RUNTIME_DIR/pmon/serve.sock,
// /run/pmon/serve.sock for root, /tmp/pmon-UID/serve.sock otherwise.
std::string default_socket_path(bool honour_env);

// The runtime directory: the default socket's directory, where the spools
// and the calls' records are kept ($XDG_RUNTIME_DIR/pmon, /run/pmon for
// root, /tmp/pmon-UID). Opened only when it is ours: no symlink (O_NOFOLLOW:
// anyone can plant /tmp/pmon-UID), our uid's, and writable by nobody else.
struct RuntimeDirError {
  int code = 0;      // ENOENT: there is none yet (nothing to look at)
  std::string what;  // "/tmp/pmon-1000 is a symlink, not a directory of yours"
};
std::expected<Fd, RuntimeDirError> open_runtime_dir();

// A service's listening socket, and the lock on PATH.lock that makes the
// path its own while it runs.
struct Listener {
  Fd sock;
  Fd lock;
  std::string path;
  // Removes the socket and the lock file, then lets go of the lock.
  void remove();
};

// Binds and listens on `path`. Its directory is made 0700 when missing and
// refused when it is a symlink or belongs to another user (root's excepted
// for an explicit path); the socket is 0600. PATH.lock is locked first, so
// that of services started at once on the same path one runs and the
// others are refused. A stale socket of ours (nobody answers) is replaced;
// a live one, a symlink or any other file is refused.
std::expected<Listener, Error> listen_unix(const std::string& path, bool default_dir);

// Connects to `path`; the error says what happened, in one line.
std::expected<Fd, Error> connect_unix(const std::string& path);

// Why a client did not connect: nobody answers (`what` is the reason, e.g.
// "No such file or directory"), or, `untrusted`, what it found would let
// another user stand in for the service: `subject` is the directory or the
// socket at fault, `what` the fact ("belongs to uid 1001, not to you").
struct ConnectError {
  bool untrusted = false;
  std::string subject;
  std::string what;
};

// Connects a client to the service on `path`, and only when no other user
// can be behind it: the socket's directory is no symlink, belongs to us or
// root and only its owner may write it (a sticky one, like /tmp, excepted:
// there nobody can replace a file of ours); the default directory
// (`default_dir`) must be ours and 0700. The socket belongs to us or root,
// and so does the process that listens on it (SO_PEERCRED). Nothing is sent.
std::expected<Fd, ConnectError> connect_service(const std::string& path, bool default_dir);

}  // namespace pmon::serve
