"""Model providers: chat models and embedders behind small interfaces."""
