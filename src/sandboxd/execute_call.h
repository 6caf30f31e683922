// SPDX-License-Identifier: Apache-2.0
// The process service's Execute, answered from the job service's thread
// (gRPC's callback API): the call is a state that the service's work and
// the job table's answers move on, and its answer is sent from there, so no
// gRPC thread waits while the command runs. A deadline or a cancel, output
// past the bound and the service's end end it as they end a Start: the
// whole tree stopped and verified gone before the answer.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string_view>

#include "process/v1/process.grpc.pb.h"
#include "sandboxd/engine.h"
#include "sandboxd/process_service.h"

namespace pmon::sandboxd {

// Shared with the streaming calls (process_service.cpp).
grpc::Status status_of(const Error& e, std::string_view what);
grpc::Status shutting_down();
// The exit code as a shell gives it: 128 + n for a signal.
int32_t shell_code(const serve::ExitStatus& s);

class ExecuteState;

// One Execute. It counts itself in `active` (the calls at once) until its
// answer is given, and in `unsent` until gRPC is done with it, and deletes
// itself then. Either refuse() it at once, or start() it.
class ExecuteCall final : public grpc::ServerUnaryReactor {
 public:
  ExecuteCall(std::atomic<size_t>& active, std::atomic<size_t>& unsent, Engine& engine, const ProcessOptions& opts,
              std::chrono::system_clock::time_point deadline, process::v1::ExecuteResponse* out);
  // Whether it came within opts.max_streams calls at once.
  bool admitted() const { return admitted_; }
  void refuse(grpc::Status s);
  // The command started on the service's thread; the answer sent from there.
  void start(serve::CreateParams p);
  void OnCancel() override;
  void OnDone() override;

 private:
  std::atomic<size_t>& unsent_;
  bool admitted_ = false;
  std::shared_ptr<ExecuteState> state_;
};

}  // namespace pmon::sandboxd
