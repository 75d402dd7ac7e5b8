#include "util/jsonrpc.h"

#include <gtest/gtest.h>

namespace orch::jsonrpc {
namespace {

TEST(JsonRpc, ReadsTheFourKinds) {
  auto req = parse(R"({"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}})");
  ASSERT_TRUE(req);
  EXPECT_EQ(req->kind, Kind::Request);
  EXPECT_EQ(req->id, 7);
  EXPECT_EQ(req->method, "tools/list");
  auto note = parse(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  ASSERT_TRUE(note);
  EXPECT_EQ(note->kind, Kind::Notification);
  EXPECT_TRUE(note->params.is_null());
  auto res = parse(R"({"jsonrpc":"2.0","id":"a","result":{"x":1}})");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->kind, Kind::Result);
  EXPECT_EQ(res->result["x"], 1);
  auto err = parse(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}})");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->kind, Kind::Error);
  EXPECT_EQ(err->error.code, -32700);
  EXPECT_EQ(err->error.message, "bad");
}

TEST(JsonRpc, RefusesWhatIsNotAMessageSayingWhy) {
  auto not_json = parse("{nope");
  ASSERT_FALSE(not_json);
  EXPECT_EQ(not_json.error().error.code, static_cast<int>(ErrorCode::ParseError));
  auto batch = parse(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
  ASSERT_FALSE(batch);
  EXPECT_EQ(batch.error().error.code, static_cast<int>(ErrorCode::InvalidRequest));
  EXPECT_NE(batch.error().error.message.find("batch"), std::string::npos);
  auto version = parse(R"({"jsonrpc":"1.0","id":3,"method":"ping"})");
  ASSERT_FALSE(version);
  EXPECT_EQ(version.error().id, 3);  // the answer can still name the request
  EXPECT_NE(version.error().error.message.find("jsonrpc"), std::string::npos);
  auto float_id = parse(R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})");
  ASSERT_FALSE(float_id);
  EXPECT_TRUE(float_id.error().id.is_null());
  auto params = parse(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":3})");
  ASSERT_FALSE(params);
  EXPECT_NE(params.error().error.message.find("params"), std::string::npos);
  auto both = parse(R"({"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}})");
  ASSERT_FALSE(both);
  auto bad_error = parse(R"({"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"y"}})");
  ASSERT_FALSE(bad_error);
}

TEST(JsonRpc, BuildsMessagesOnOneLine) {
  EXPECT_EQ(line(request(1, "ping")), R"({"id":1,"jsonrpc":"2.0","method":"ping"})");
  EXPECT_EQ(line(notification("notifications/cancelled", {{"requestId", 4}})),
            R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}})");
  EXPECT_EQ(line(result("x", nlohmann::json::object())), R"({"id":"x","jsonrpc":"2.0","result":{}})");
  EXPECT_EQ(line(error(nullptr, RpcError(ErrorCode::ParseError, "not JSON"))),
            R"({"error":{"code":-32700,"message":"not JSON"},"id":null,"jsonrpc":"2.0"})");
  // A newline inside a value stays escaped: one message, one line.
  EXPECT_EQ(line(result(1, "a\nb")).find('\n'), std::string::npos);
  // Invalid UTF-8 (a process's output) is replaced, never thrown on.
  EXPECT_NO_THROW(line(result(1, std::string("\xff\xfe"))));
}

}  // namespace
}  // namespace orch::jsonrpc
