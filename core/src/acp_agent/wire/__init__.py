"""The wire: JSON-RPC over stdio, the ACP types and their converter."""
