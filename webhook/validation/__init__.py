"""What kube-apiserver does to an object: its rules on topologySpreadConstraints, and our advice."""
