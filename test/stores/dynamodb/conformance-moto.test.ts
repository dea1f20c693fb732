import { dynamoConformance } from './conformance.js';

// A real moto server (an independent implementation of the DynamoDB API, in memory).
await dynamoConformance('moto');
