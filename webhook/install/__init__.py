"""Installing the webhook: certificates and manifests."""
