// SPDX-License-Identifier: Apache-2.0
// serve::RequestBudget: requests waiting for their answer, capped per
// connection and in bytes for all, each given back once however it ends.
#include "jobs/request_budget.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

using pmon::serve::RequestBudget;

namespace {

std::shared_ptr<RequestBudget::Tally> tally() { return std::make_shared<RequestBudget::Tally>(); }

TEST(RequestBudget, CapsEachConnection) {
  RequestBudget b(1 << 20, 3);
  auto a = tally(), other = tally();
  std::vector<RequestBudget::Ticket> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(b.take(a, 10, nullptr));
    ASSERT_TRUE(held.back());
  }
  RequestBudget::Over over = RequestBudget::Over::bytes;
  EXPECT_FALSE(b.take(a, 10, &over));
  EXPECT_EQ(over, RequestBudget::Over::per_connection);
  // Another connection has its own count.
  EXPECT_TRUE(b.take(other, 10, nullptr));
  EXPECT_EQ(a->count, 3u);
  // One answered: one more may wait.
  held.erase(held.begin());
  EXPECT_EQ(a->count, 2u);
  EXPECT_TRUE(b.take(a, 10, nullptr));
}

TEST(RequestBudget, CapsTheBytesOfAll) {
  RequestBudget b(100, 1000);
  auto a = tally(), c = tally();
  auto t1 = b.take(a, 60, nullptr);
  ASSERT_TRUE(t1);
  RequestBudget::Over over = RequestBudget::Over::per_connection;
  EXPECT_FALSE(b.take(c, 41, &over));
  EXPECT_EQ(over, RequestBudget::Over::bytes);
  EXPECT_EQ(c->count, 0u);  // a refused request is not counted
  auto t2 = b.take(c, 40, nullptr);
  ASSERT_TRUE(t2);
  EXPECT_EQ(b.used(), 100u);
  EXPECT_EQ(b.count(), 2u);
  t1 = RequestBudget::Ticket();  // given back
  EXPECT_EQ(b.used(), 40u);
  EXPECT_TRUE(b.take(a, 60, nullptr));  // (a temporary: given back at once)
  EXPECT_EQ(b.used(), 40u);
}

TEST(RequestBudget, MovedTicketsGiveBackOnce) {
  RequestBudget b(100, 10);
  auto a = tally();
  std::vector<RequestBudget::Ticket> v;
  v.push_back(b.take(a, 30, nullptr));
  v.push_back(b.take(a, 30, nullptr));
  v.reserve(64);  // moved into new storage
  RequestBudget::Ticket moved = std::move(v[0]);
  EXPECT_FALSE(v[0]);
  v.clear();
  EXPECT_EQ(b.used(), 30u);
  EXPECT_EQ(a->count, 1u);
}

TEST(RequestBudget, OutlivesItsConnectionsRecord) {
  RequestBudget b(100, 10);
  auto a = tally();
  auto t = b.take(a, 5, nullptr);
  a.reset();  // the connection is gone; its waiting request later
  t = RequestBudget::Ticket();
  EXPECT_EQ(b.used(), 0u);
  EXPECT_EQ(b.count(), 0u);
}

}  // namespace
