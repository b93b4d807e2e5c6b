-- One database per node (each node's lesson store is its own); the node creates the vector
-- extension and its tables on first start (it connects as the superuser created by the image).
CREATE DATABASE node1;
CREATE DATABASE node2;
CREATE DATABASE node3;
