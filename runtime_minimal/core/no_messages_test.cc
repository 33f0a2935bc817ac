// The core profile built with -DAGATE_RT_NO_MESSAGES (flash-constrained
// microcontrollers): statuses are unchanged and the message names the status and
// the source line of the check that refused, not a line inside the message code.
#include <gtest/gtest.h>

#include <string>

#include "agate/runtime.h"

namespace {

std::string Message() { return agate_last_error_message(); }

TEST(NoMessagesTest, RefusalsNameTheStatusAndTheCheckingLine) {
  const unsigned char too_short[4] = {1, 2, 3, 4};
  size_t bytes = 0;
  EXPECT_EQ(agate_module_in_place_bytes(too_short, sizeof(too_short), &bytes), AGATE_CORRUPT);
  EXPECT_EQ(Message().rfind("corrupt at runtime_minimal/core/verify.cc:", 0), 0u) << Message();

  alignas(8) unsigned char not_agate[16] = {8, 0, 0, 0, 'O', 'N', 'N', 'X'};
  EXPECT_EQ(agate_module_in_place_bytes(not_agate, sizeof(not_agate), &bytes), AGATE_CORRUPT);
  const std::string identifier_message = Message();
  EXPECT_EQ(identifier_message.rfind("corrupt at runtime_minimal/core/verify.cc:", 0), 0u) << identifier_message;

  uint32_t count = 0;
  EXPECT_EQ(agate_module_num_inputs(nullptr, &count), AGATE_INVALID_ARGUMENT);
  EXPECT_EQ(Message().rfind("invalid argument at runtime_minimal/core/c_api.cc:", 0), 0u) << Message();
  EXPECT_NE(Message(), identifier_message);
}

}  // namespace
