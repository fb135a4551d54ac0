/** Who is calling, from where: carried into every audit event. */
export type RequestMetadata = {
  requestId: string;
  ip: string | null;
  userAgent: string | null;
};
