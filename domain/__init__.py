"""The vocabulary every layer shares: the lesson store's row types, the embedder
contract and small pure containers. Standard library and numpy only."""
