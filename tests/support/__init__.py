"""Test support: real local stand-ins for remote services (no mocks)."""
