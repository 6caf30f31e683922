// SPDX-License-Identifier: Apache-2.0
// sandboxd's process service (gRPC process.v1.ProcessService): every
// command a client starts is a job of pmon's job engine, so a full pmon
// call (its own cgroup leaf, PID namespace or subreaper): a signal reaches
// every process of it, a stop stops the whole tree and verifies it gone,
// and its end (the main process exits) stops what it left running without
// waiting on a grandchild that holds its pipes, nothing it wrote before
// lost.
#pragma once

#include <cstddef>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include <grpcpp/support/server_interceptor.h>

#include "process/v1/process.grpc.pb.h"
#include "sandboxd/engine.h"

namespace pmon::sandboxd {

struct ProcessOptions {
  std::string root;           // the sandbox root: a cwd must be under it
  size_t chunk = 4096;        // the most bytes in one stdout or stderr event
  size_t max_streams = 1024;  // Start and Execute calls at once, past which RESOURCE_EXHAUSTED
  // The most an Execute keeps of each stream (its answer is one message).
  size_t execute_output_limit = size_t{64} << 20;
  // SendSignal SIGKILL: the stop with no grace (ServeOptions::stop_at_once).
  StopPlan kill_plan = StopPlan::standard(SIGKILL, Nanos{0});
  // Each command runs under a pmon of its own (ServeOptions::job_wrapper).
  bool own_pmon = false;
};

// Execute is served through gRPC's callback API (sandboxd/execute_call.h),
// the streaming calls by handlers that wait on gRPC's threads.
class ProcessService final : public process::v1::ProcessService::WithCallbackMethod_Execute<process::v1::ProcessService::Service> {
 public:
  ProcessService(Engine& engine, ProcessOptions opts) : engine_(engine), opts_(std::move(opts)) {}

  grpc::Status Start(grpc::ServerContext* ctx, const process::v1::StartRequest* req,
                     grpc::ServerWriter<process::v1::StartResponse>* out) override;
  grpc::ServerUnaryReactor* Execute(grpc::CallbackServerContext* ctx, const process::v1::ExecuteRequest* req,
                                    process::v1::ExecuteResponse* out) override;
  grpc::Status WriteStdin(grpc::ServerContext* ctx, const process::v1::WriteStdinRequest* req,
                          process::v1::WriteStdinResponse* out) override;
  grpc::Status SendSignal(grpc::ServerContext* ctx, const process::v1::SendSignalRequest* req,
                          process::v1::SendSignalResponse* out) override;
  grpc::Status ResizeTTY(grpc::ServerContext* ctx, const process::v1::ResizeTTYRequest* req,
                         process::v1::ResizeTTYResponse* out) override;

  // pmon's (POST /v1/reset): every command any client started and that
  // runs is stopped, each tree verified gone and each TCP port it listened
  // on checked released; the HTTP status and, as JSON, what was stopped.
  std::pair<int, std::string> reset();

  // Once the engine is stopped: waits until every Start and Execute has
  // answered (each had its command's end) and gRPC is done with each (its
  // last message and its status sent), or `deadline`.
  void wait_answered(std::chrono::system_clock::time_point deadline) const;

  // For the server's builder: counts each Start call from its arrival until
  // gRPC is done with it. A Start's handler returns before its status is
  // sent, and a server shut down in between would cancel the call: its
  // client would see UNAVAILABLE instead of the end it was sent.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> start_counter();

 private:
  Engine& engine_;
  ProcessOptions opts_;
  std::atomic<size_t> active_{0};  // Start and Execute calls not yet answered
  std::atomic<size_t> unsent_{0};  // Start and Execute calls gRPC is not done with (their end on its way)
};

}  // namespace pmon::sandboxd
