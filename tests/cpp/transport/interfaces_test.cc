#include "transport/tcp/interfaces.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/errors.h"

namespace kolo::transport {
namespace {

using Names = std::vector<std::string>;

// A host with a real NIC, an unroutable docker bridge and loopback.
std::vector<InterfaceAddress> sample_host() {
  return {{"lo", "127.0.0.1", true},
          {"eth0", "10.1.2.3", false},
          {"docker0", "172.17.0.1", false},
          {"eth1", "192.168.5.7", false},
          {"eth1", "192.168.6.7", false}};
}

TEST(Interfaces, EnumerationFindsLoopbackUpWithItsAddress) {
  const auto found = up_ipv4_interfaces();
  const auto loopback = std::find_if(found.begin(), found.end(), [](const InterfaceAddress& a) {
    return a.address == "127.0.0.1";
  });
  ASSERT_NE(loopback, found.end());
  EXPECT_TRUE(loopback->loopback);
  EXPECT_FALSE(loopback->name.empty());
  for (const auto& entry : found) EXPECT_NE(entry.address.find('.'), std::string::npos);
}

TEST(Interfaces, RouteTowardLoopbackIsLoopbackAndNonNumericServersHaveNone) {
  EXPECT_EQ(address_toward("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(address_toward("localhost"), "127.0.0.1");
  EXPECT_EQ(address_toward("not-an-address"), "");
}

TEST(Interfaces, WithoutNamesTheRouteComesFirstThenEveryNonLoopbackAddress) {
  EXPECT_EQ(candidate_addresses(sample_host(), {}, "192.168.5.7"),
            (Names{"192.168.5.7", "10.1.2.3", "172.17.0.1", "192.168.6.7"}));
}

TEST(Interfaces, LoopbackIsPublishedOnlyForASingleHostJob) {
  EXPECT_EQ(candidate_addresses(sample_host(), {}, "127.0.0.1"),
            (Names{"127.0.0.1", "10.1.2.3", "172.17.0.1", "192.168.5.7", "192.168.6.7"}));
  EXPECT_EQ(candidate_addresses({{"lo", "127.0.0.1", true}}, {}, ""), Names{});
}

TEST(Interfaces, NamedInterfacesAreTheOnlyCandidatesRouteFirst) {
  EXPECT_EQ(candidate_addresses(sample_host(), {"eth0"}, "192.168.5.7"), (Names{"10.1.2.3"}));
  EXPECT_EQ(candidate_addresses(sample_host(), {"eth0", "eth1"}, "192.168.6.7"),
            (Names{"192.168.6.7", "10.1.2.3", "192.168.5.7"}));
  EXPECT_EQ(candidate_addresses(sample_host(), {"lo"}, "10.1.2.3"), (Names{"127.0.0.1"}));
}

TEST(Interfaces, AnUnknownNameIsAnErrorNamingItAndTheAvailableOnes) {
  try {
    (void)candidate_addresses(sample_host(), {"eth0", "wlan9"}, "10.1.2.3");
    FAIL() << "wlan9 was accepted";
  } catch (const InvalidArgument& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("'wlan9'"), std::string::npos) << text;
    EXPECT_NE(text.find("docker0 (172.17.0.1)"), std::string::npos) << text;
    EXPECT_NE(text.find("eth1 (192.168.6.7)"), std::string::npos) << text;
  }
}

TEST(Interfaces, TheRealHostRejectsAnInterfaceItDoesNotHave) {
  EXPECT_THROW((void)candidate_addresses(up_ipv4_interfaces(), {"kolo-no-such0"}, ""),
               InvalidArgument);
}

}  // namespace
}  // namespace kolo::transport
