"""Real servers on loopback that the tests start themselves (no protocol is mocked)."""
