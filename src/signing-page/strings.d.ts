// Types for the browser module strings.js (plain JavaScript, served as is), for the tests that read it.
type Text = string | ((...values: any[]) => string);
export declare const STRINGS: Record<'en-US' | 'tr-TR', Record<string, any> & { [key: string]: Text | Record<string, string> }>;
export declare const LOCALES: string[];
