// The Unix socket of pmon serve: where it lives by default, how it is made
// safe to listen on, and how a client reaches it.
#pragma once

#include <expected>
#include <string>

#include "sys/fd.h"

namespace pmon::serve {

// $PMON_SOCKET when set (clients only), else $XDG_RUNTIME_DIR/pmon/serve.sock,
// /run/pmon/serve.sock for root, /tmp/pmon-UID/serve.sock otherwise.
std::string default_socket_path(bool honour_env);

// Binds and listens on `path`. Its directory is made 0700 when missing and
// refused when it is a symlink or belongs to another user (root's excepted
// for an explicit path); the socket is 0600. A stale socket of ours (nobody
// answers) is replaced; a live one, a symlink or any other file is refused.
std::expected<Fd, std::string> listen_unix(const std::string& path, bool default_dir);

// Connects to `path`; the error says what happened, in one line.
std::expected<Fd, std::string> connect_unix(const std::string& path);

}  // namespace pmon::serve
